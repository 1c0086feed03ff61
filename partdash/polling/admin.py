"""The admin's `Poll now`: polling adds it to the servers' admin, which knows nothing of
polling (the layers: polling imports servers, never the reverse)."""

from django.contrib import admin, messages

from partdash.accounts import audit
from partdash.polling.scheduling import request_poll
from partdash.servers.admin import ServerAdmin
from partdash.servers.models import Server


class PollingServerAdmin(ServerAdmin):
    """The servers' admin, with `Poll now` beside `Test connection`."""

    actions = [*ServerAdmin.actions, "poll_now"]

    @admin.action(description="Poll now", permissions=["poll"])
    def poll_now(self, request, queryset):
        queued = []
        for server in queryset:
            if request_poll(server.pk, force=True):
                queued.append(server.name)
            audit.record("poll_now", server)
        level = messages.SUCCESS if len(queued) == queryset.count() else messages.WARNING
        self.message_user(
            request, f"Poll queued for {len(queued)} of {queryset.count()} servers.", level
        )


admin.site.unregister(Server)
admin.site.register(Server, PollingServerAdmin)
