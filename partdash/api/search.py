"""GET /api/v1/search/?q=: fleet-wide search for a schema or table."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from partdash.metrics.search import DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_LENGTH, search_tables


class SearchQuery(serializers.Serializer):
    """`q`: the text to find (1 to 129 characters once trimmed); `limit`: 1 to 200."""

    q = serializers.CharField(max_length=MAX_QUERY_LENGTH)
    limit = serializers.IntegerField(min_value=1, max_value=MAX_LIMIT, default=DEFAULT_LIMIT)


class SearchHitSerializer(serializers.Serializer):
    """One table found, with where it lives and how it is doing."""

    id = serializers.IntegerField()
    schema = serializers.CharField()
    name = serializers.CharField()
    server_id = serializers.IntegerField()
    server = serializers.CharField(source="server.name")
    method = serializers.CharField()
    partition_count = serializers.IntegerField()
    rows = serializers.IntegerField(source="total_rows", allow_null=True)
    score = serializers.FloatField()


class SearchResultSerializer(serializers.Serializer):
    q = serializers.CharField()
    results = SearchHitSerializer(many=True)
    truncated = serializers.BooleanField(help_text="more tables matched than `limit`")


class SearchView(APIView):
    """Live tables on every server whose `schema.table` contains `q`, ignoring accents
    and case: exact table names first, then names starting with `q`, then the rest."""

    @extend_schema(
        parameters=[
            OpenApiParameter("q", str, required=True, description="text to find"),
            OpenApiParameter("limit", int, description=f"at most this many (1-{MAX_LIMIT})"),
        ],
        responses=SearchResultSerializer,
    )
    def get(self, request) -> Response:
        query = SearchQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        text, limit = query.validated_data["q"], query.validated_data["limit"]
        found = search_tables(text, limit)
        body = {"q": text, "results": found.tables, "truncated": found.truncated}
        return Response(SearchResultSerializer(body).data)
