"""What the OpenAPI document says beyond drf-spectacular's defaults."""

from drf_spectacular.openapi import AutoSchema

from partdash.accounts.permissions import who_may

# A JSON object, or null where there is nothing to say (a table's `compression` when it
# is not compressed, its `runway` unless RANGE-partitioned, ...).
NULLABLE_OBJECT = {"type": "object", "nullable": True, "additionalProperties": {}}


class PartdashSchema(AutoSchema):
    """Read-only fields are required in answers (drf-spectacular's default), except those
    a serializer lists in `Meta.optional_in_response`: present in some answers only (a
    server's `warnings`, in the answers to writes). Every operation says who may call it."""

    def get_description(self) -> str:
        """The view's own words, then who may call it, from the rules that decide it
        (`permissions.method_permission`), so the document cannot say otherwise."""
        own = super().get_description()
        return "\n\n".join(text for text in (own, who_may(self.method, self.view)) if text)

    def _map_basic_serializer(self, serializer, direction):
        result = super()._map_basic_serializer(serializer, direction)
        optional = set(getattr(getattr(serializer, "Meta", None), "optional_in_response", ()))
        required = [name for name in result.get("required", []) if name not in optional]
        if required:
            result["required"] = required
        else:
            result.pop("required", None)
        return result
