"""API representations. Passwords are write-only."""

from copy import copy

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from partdash.health.sizes import estimated_data_free, row_share
from partdash.metrics.history import METRICS
from partdash.metrics.models import Partition, PartitionedTable
from partdash.servers.models import LATEST_POLL_FIELDS, Server


class ServerSerializer(serializers.ModelSerializer):
    password = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        style={"input_type": "password"},
    )
    tags = serializers.CharField(required=False, allow_blank=True, max_length=500)

    class Meta:
        model = Server
        fields = [
            "id",
            "name",
            "host",
            "port",
            "user",
            "password",
            "tls_mode",
            "ssl_ca",
            "poll_interval",
            "enabled",
            "tags",
            *LATEST_POLL_FIELDS,
        ]
        read_only_fields = LATEST_POLL_FIELDS

    def validate(self, attrs: dict) -> dict:
        server = copy(self.instance) if self.instance else Server()
        for field, value in attrs.items():
            if field != "password":
                setattr(server, field, value)
        try:
            server.clean()
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from None
        if "tags" in attrs:
            attrs["tags"] = server.tags
        return attrs

    def _save(self, server: Server, validated: dict) -> Server:
        password = validated.pop("password", None)
        for field, value in validated.items():
            setattr(server, field, value)
        if password is not None:
            server.set_password(password)
        server.save()
        return server

    def create(self, validated_data: dict) -> Server:
        return self._save(Server(), validated_data)

    def update(self, instance: Server, validated_data: dict) -> Server:
        return self._save(instance, validated_data)


class TableSerializer(serializers.ModelSerializer):
    """A partitioned table with totals over its live partitions. Health fields are filled
    by the analytics (null until then)."""

    schema = serializers.CharField()
    rows = serializers.IntegerField(source="total_rows", allow_null=True)
    data_bytes = serializers.IntegerField(source="total_data_bytes", allow_null=True)
    index_bytes = serializers.IntegerField(source="total_index_bytes", allow_null=True)
    file_bytes = serializers.IntegerField(source="total_file_bytes", allow_null=True)
    skew = serializers.JSONField(default=None, read_only=True)
    hotspots = serializers.JSONField(default=None, read_only=True)
    compression = serializers.JSONField(default=None, read_only=True)
    runway = serializers.JSONField(default=None, read_only=True)

    class Meta:
        model = PartitionedTable
        fields = [
            "id",
            "schema",
            "name",
            "method",
            "expression",
            "subpartition_method",
            "partition_count",
            "rows",
            "data_bytes",
            "index_bytes",
            "file_bytes",
            "skew",
            "hotspots",
            "compression",
            "runway",
            "first_seen_at",
            "definitions_read_at",
        ]


class PartitionSerializer(serializers.ModelSerializer):
    """One partition's latest figures; rows and sizes are estimates from InnoDB's
    persistent statistics (`stats_updated_at` says how old)."""

    data_free = serializers.SerializerMethodField()
    row_share = serializers.SerializerMethodField()
    is_hotspot = serializers.BooleanField(default=None, read_only=True, allow_null=True)
    compression = serializers.JSONField(default=None, read_only=True)

    class Meta:
        model = Partition
        fields = [
            "name",
            "subpartition",
            "ordinal",
            "subpartition_ordinal",
            "description",
            "rows",
            "data_bytes",
            "index_bytes",
            "data_free",
            "file_bytes",
            "allocated_bytes",
            "read_bytes_per_s",
            "write_bytes_per_s",
            "row_share",
            "is_hotspot",
            "compression",
            "stats_updated_at",
            "modified_counter",
            "autoinc",
            "read_ops",
            "write_ops",
            "read_bytes",
            "write_bytes",
            "row_format",
            "changed_at",
        ]

    def get_data_free(self, partition: Partition) -> int | None:
        return estimated_data_free(
            partition.file_bytes, partition.data_bytes, partition.index_bytes
        )

    def get_row_share(self, partition: Partition) -> float | None:
        return row_share(partition.rows, self.context.get("table_rows"))


class HistoryQuery(serializers.Serializer):
    metric = serializers.ChoiceField(choices=METRICS)
    since = serializers.DateTimeField(required=False)
