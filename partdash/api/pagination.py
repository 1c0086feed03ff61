"""Pages for lists that grow with the fleet, without breaking clients that read a plain
list: without `?limit=` (or `?offset=`) the answer is the whole list, as before; with
it, `{count, next, previous, results}`, at most MAX_LIMIT rows a page."""

from rest_framework.pagination import LimitOffsetPagination

MAX_LIMIT = 1000


class OptionalLimitOffset(LimitOffsetPagination):
    default_limit = None
    max_limit = MAX_LIMIT

    def get_limit(self, request) -> int | None:
        if self.limit_query_param not in request.query_params:
            if self.offset_query_param in request.query_params:
                return self.max_limit  # an offset alone: pages of the largest size
            return None
        return super().get_limit(request) or self.max_limit

    def get_paginated_response_schema(self, schema: dict) -> dict:
        """The OpenAPI answer: the plain list (no `limit`/`offset`) or a page."""
        return {"oneOf": [schema, super().get_paginated_response_schema(schema)]}
