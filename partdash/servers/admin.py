"""Registering servers in the Django admin, with `Test connection` (`Poll now` is added by
`partdash.polling.admin`: polling sits above servers)."""

from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.html import format_html

from partdash.accounts.permissions import POLL, can
from partdash.lib.admin_lookups import SecretLookupsRefused
from partdash.lib.secrets import SecretError
from partdash.mysql.connection import target_for
from partdash.mysql.probe import ProbeResult, probe
from partdash.servers.forms import ServerForm
from partdash.servers.models import LATEST_POLL_FIELDS, Server, ServerGroup
from partdash.servers.probe_limits import TooManyTests, probe_slot

MAX_SERVERS_PER_TEST = 10
"""Servers one Test connection action may test, at the same time, in one web request."""


def probe_servers(servers: list[Server]) -> list[tuple[Server, ProbeResult]]:
    """Each server's probe, run side by side, each ended by the deadline
    (PARTDASH_TEST_CONNECTION_SECONDS) whatever the server does."""
    deadline = settings.PARTDASH_TEST_CONNECTION_SECONDS
    targets: list = []
    for server in servers:
        try:
            targets.append(target_for(server))
        except SecretError as exc:
            targets.append(ProbeResult(reachable=False, error_kind="secret", error=str(exc)))

    def run(target) -> ProbeResult:
        return target if isinstance(target, ProbeResult) else probe(target, deadline)

    with ThreadPoolExecutor(max_workers=max(1, len(targets))) as pool:
        results = list(pool.map(run, targets))
    for server, result in zip(servers, results, strict=True):
        server.record_tls(result.tls_offered, result.tls_fingerprint)
    return list(zip(servers, results, strict=True))


# The admin shows times in the server's zone (UTC) and the pages in the browser's: the
# header, on every admin page, says which.
admin.site.site_header = f"partdash administration · times in {settings.TIME_ZONE}"
admin.site.site_title = "partdash admin"
admin.site.site_url = "/"


@admin.register(Server)
class ServerAdmin(SecretLookupsRefused):
    form = ServerForm
    list_display = [
        "name",
        "address",
        "flavor",
        "version",
        "status_badge",
        "last_poll_utc",
        "partitions",
        "poll_interval",
        "enabled",
        "tags",
    ]
    list_filter = ["status", "enabled", "flavor"]
    search_fields = ["name", "host", "tags"]
    readonly_fields = [*LATEST_POLL_FIELDS, "has_password"]
    actions = ["test_connection"]
    fieldsets = [
        (None, {"fields": ["name", "host", "port", "user", "password", "clear_password"]}),
        ("TLS", {"fields": ["tls_mode", "ssl_ca", "tls_approved_fingerprint"]}),
        (
            "Polling",
            {"fields": ["poll_interval", "enabled", "tags", "explain_statements", "export_tables"]},
        ),
        (
            "Latest poll",
            {"fields": [*LATEST_POLL_FIELDS, "has_password"]},
        ),
    ]

    def get_fieldsets(self, request, obj=None):
        """The password's boxes only for who may change the server: nothing of the
        password (not even an empty box) is a view-only user's."""
        if obj is None or self.has_change_permission(request, obj):
            return self.fieldsets
        secret = {"password", "clear_password"}
        return [
            (name, {**options, "fields": [f for f in options["fields"] if f not in secret]})
            for name, options in self.fieldsets
        ]

    @admin.display(description="Status", ordering="status")
    def status_badge(self, server: Server) -> str:
        return format_html('<span class="status-{}">{}</span>', server.status, server.status)

    @admin.display(description="Last poll (UTC)", ordering="last_poll_at")
    def last_poll_utc(self, server: Server):
        return server.last_poll_at

    @admin.display(boolean=True, description="Password stored")
    def has_password(self, server: Server) -> bool:
        return server.has_password

    def save_model(self, request, obj: Server, form, change: bool) -> None:
        super().save_model(request, obj, form, change)
        warning = obj.same_address_warning()
        if warning:
            self.message_user(request, warning, messages.WARNING)

    def get_urls(self):
        test = self.admin_site.admin_view(self.test_connection_view)
        return [
            path("<int:server_id>/test-connection/", test, name="servers_server_test_connection"),
        ] + super().get_urls()

    def _probe_page(self, request, servers: list[Server], results=None):
        """The Test connection page: `results` once tested, else the button that tests."""
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Test connection",
            "servers": servers,
            "results": results,
            "deadline": settings.PARTDASH_TEST_CONNECTION_SECONDS,
        }
        return TemplateResponse(request, "admin/servers/server/test_connection.html", context)

    def _tested(self, request, servers: list[Server]):
        try:
            with probe_slot(request.user.pk):
                return self._probe_page(request, servers, probe_servers(servers))
        except TooManyTests as exc:
            self.message_user(request, str(exc), messages.ERROR)
            response = self._probe_page(request, servers)
            response.status_code = 429
            return response

    def has_poll_permission(self, request) -> bool:
        """Poll now and Test connection: `servers.poll_server` (operators, admins), not
        staff status alone."""
        return can(request.user, POLL)

    def test_connection_view(self, request, server_id: int):
        """GET: the page with a button; POST (the button): the test. A test connects to
        the server, so a link, a prefetch or a crawler never starts one."""
        if not self.has_poll_permission(request):
            raise PermissionDenied
        server = get_object_or_404(Server, pk=server_id)
        if request.method != "POST":
            return self._probe_page(request, [server])
        return self._tested(request, [server])

    @admin.action(description="Test connection", permissions=["poll"])
    def test_connection(self, request, queryset):
        servers = list(queryset.order_by("name")[: MAX_SERVERS_PER_TEST + 1])
        if len(servers) > MAX_SERVERS_PER_TEST:
            self.message_user(
                request,
                f"Select at most {MAX_SERVERS_PER_TEST} servers to test at a time "
                f"({queryset.count()} selected).",
                messages.ERROR,
            )
            return None
        return self._tested(request, servers)


@admin.register(ServerGroup)
class ServerGroupAdmin(admin.ModelAdmin):
    """Replicas or shards whose tables are compared after each member's poll."""

    list_display = ["name", "kind", "member_names", "reference", "excluded_schemas"]
    list_filter = ["kind"]
    search_fields = ["name", "servers__name"]
    filter_horizontal = ["servers"]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("servers")

    @admin.display(description="members")
    def member_names(self, group: ServerGroup) -> str:
        return ", ".join(sorted(s.name for s in group.servers.all()))

    def save_related(self, request, form, formsets, change) -> None:
        super().save_related(request, form, formsets, change)
        group = form.instance
        problem = group.reference_problem(group.servers.all())
        if problem:  # the reference left the group: no reference, said once
            ServerGroup.objects.filter(pk=group.pk).update(reference=None)
            self.message_user(request, f"{problem}: cleared it", messages.WARNING)
