"""Retention policies in the admin (the API's `/api/v1/retention-policies/` likewise):
the form checks one of keep days and keep partitions (`RetentionPolicy.clean`).

They live in the `metrics` app, whose admin section is "Snapshots"; a DBA looking for
how long partitions are kept does not look there, so the admin's index and side bar list
them in a section of their own, "Retention" (`retention_apart`)."""

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from partdash.metrics.models import RetentionPolicy

RETENTION_SECTION = "Retention"
AppList = list[dict[str, Any]]


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(admin.ModelAdmin):
    list_display = ["pattern", "keep", "server", "name", "updated_at"]
    list_filter = ["server"]
    search_fields = ["pattern", "name", "comment"]
    fields = ["pattern", "keep_days", "keep_partitions", "server", "name", "comment"]

    @admin.display(description="Keep")
    def keep(self, policy: RetentionPolicy) -> str:
        if policy.keep_days is not None:
            return f"{policy.keep_days} days"
        return f"{policy.keep_partitions} partitions"


def retention_apart(sections: AppList) -> AppList:
    """The admin's sections with retention policies moved out of their app's section into
    one named "Retention" (the app's section dropped if nothing else is left in it), in the
    admin's alphabetical order."""
    apart: AppList = []
    for section in sections:
        policies = [m for m in section["models"] if m["object_name"] == RetentionPolicy.__name__]
        if not policies:
            apart.append(section)
            continue
        others = [m for m in section["models"] if m not in policies]
        if others:
            apart.append({**section, "models": others})
        apart.append({**section, "name": RETENTION_SECTION, "models": policies})
    return sorted(apart, key=lambda section: section["name"].lower())


def _with_retention_apart(get_app_list: Callable[..., AppList]) -> Callable[..., AppList]:
    @wraps(get_app_list)
    def app_list(request: HttpRequest, app_label: str | None = None) -> AppList:
        return retention_apart(get_app_list(request, app_label))

    return app_list


admin.site.get_app_list = _with_retention_apart(admin.site.get_app_list)
