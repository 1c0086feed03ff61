"""A JSON parser with a size and a nesting cap: a huge or deeply nested body is a 4xx,
not a worker busy for seconds or a RecursionError."""

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils import json

MAX_DEPTH = 32  # the deepest body partdash reads (an alert rule) nests 2 levels


def depth(value) -> int:
    """How deeply `value` nests lists and objects, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        value, level = stack.pop()
        children = value.values() if isinstance(value, dict) else value
        if isinstance(value, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in children)
    return deepest


class BodyTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "the body is too large"
    default_code = "too_large"


class BoundedJSONParser(JSONParser):
    """JSON of at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes and MAX_DEPTH levels."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 2_621_440
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise BodyTooLarge(f"the body is larger than {limit} bytes")
        encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
        constant = json.strict_constant if self.strict else None
        try:
            data = json.loads(raw.decode(encoding), parse_constant=constant)
        except RecursionError:
            raise ParseError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        if depth(data) > MAX_DEPTH:
            raise ParseError(f"JSON nested deeper than {MAX_DEPTH} levels")
        return data
