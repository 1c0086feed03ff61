"""Model fields for what a monitored server sends."""

from typing import TYPE_CHECKING, Any

from django.db import models


class ClippedCharField(models.CharField):
    """A CharField whose values are cut to `max_length` on their way to the database.
    A monitored server (or whatever answers at its address) may send a 150-character
    version or engine name: PostgreSQL and MySQL in strict mode refuse a string longer
    than its column, which failed the whole poll. For text shown, never matched on.

    It deconstructs as a plain CharField: the column is the same, so no migration."""

    if TYPE_CHECKING:  # what mypy, without the Django plugin, cannot tell: a model's
        # attribute holds the string (Django's fields are untyped, this one is not)

        def __set__(self, instance: Any, value: str) -> None: ...

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if isinstance(value, str) and self.max_length is not None:
            return value[: self.max_length]
        return value

    def deconstruct(self):
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.CharField", args, kwargs
