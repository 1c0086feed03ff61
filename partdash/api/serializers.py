"""API representations. Passwords are write-only."""

from copy import copy

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from partdash.servers.models import Server


class ServerSerializer(serializers.ModelSerializer):
    password = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        style={"input_type": "password"},
    )
    tags = serializers.CharField(required=False, allow_blank=True)

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
            "flavor",
            "version",
            "status",
            "last_poll_at",
            "last_error",
            "partitioned_tables",
            "partitions",
        ]
        read_only_fields = [
            "flavor",
            "version",
            "status",
            "last_poll_at",
            "last_error",
            "partitioned_tables",
            "partitions",
        ]

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
