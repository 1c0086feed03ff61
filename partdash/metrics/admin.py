"""Retention policies in the admin (the API's `/api/v1/retention-policies/` likewise):
the form checks one of keep days and keep partitions (`RetentionPolicy.clean`)."""

from django.contrib import admin

from partdash.metrics.models import RetentionPolicy


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
