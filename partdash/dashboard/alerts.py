"""The alerts page (its lists come from the JSON API) and the silence page that every
alert email links to: `/alerts/silence/?server=ID&schema=S&table=T&rule=R`."""

import re
from datetime import datetime

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from partdash.accounts.permissions import ADD_SILENCE, SEND_TEST_ALERT, can
from partdash.alerts import acks
from partdash.alerts.delivery import one_line
from partdash.alerts.history import history_of
from partdash.alerts.listing import OPEN, alerts_as_shown
from partdash.alerts.models import Alert, Channel, Silence, rule_choices, rule_names
from partdash.alerts.silences import DURATIONS, alerts_matched_by
from partdash.alerts.testalert import (
    TestAlertLate,
    TestAlertRefused,
    TooMany,
    send_test_alert_as,
)
from partdash.metrics.models import PartitionedTable
from partdash.servers.models import Server

SCOPE = ("server", "schema", "table", "rule")  # a silence's matchers; None matches all
AN_ID = re.compile(r"[1-9][0-9]{0,17}")  # a row id as a link spells it
PREVIEW = 20  # open alerts listed under the silence form; the rest are counted


@login_required
def alerts(request: HttpRequest) -> HttpResponse:
    """Firing, pending, silenced and recent history, filtered by `?server=`, `?rule=`
    and `?table=` (the JS module reads them from the address and asks the API)."""
    # Filters the API would refuse are dropped here, so the page lists rather than fails.
    chosen = {key: request.GET.get(key, "") for key in ("server", "rule", "table")}
    chosen = {
        "server": chosen["server"] if AN_ID.fullmatch(chosen["server"]) else "",
        "rule": chosen["rule"] if chosen["rule"] in rule_names() else "",
        "table": chosen["table"] if AN_ID.fullmatch(chosen["table"]) else "",
    }
    tables = PartitionedTable.objects.select_related("server")
    context = {
        "servers": Server.objects.only("pk", "name"),
        "rules": rule_choices(),
        "table": tables.filter(pk=int(chosen["table"])).first() if chosen["table"] else None,
        "chosen_server": chosen["server"],
        "chosen_rule": chosen["rule"],
        "chosen_table": chosen["table"],
        "may_write": can(request.user, ADD_SILENCE),
        "may_test": can(request.user, SEND_TEST_ALERT),
        "channels": Channel.objects.filter(enabled=True).values_list("name", flat=True),
    }
    return render(request, "dashboard/alerts.html", context)


@login_required
def alert_history(request: HttpRequest, alert_id: int) -> HttpResponse:
    """One alert: its figures, transitions with the messages that carried them (and
    their outcome), and acknowledgements."""
    alert = get_object_or_404(
        Alert.objects.select_related("server", "acknowledged_by"), pk=alert_id
    )
    return render(request, "dashboard/alert.html", {"alert": alert, "history": history_of(alert)})


def acknowledge(request: HttpRequest, token: str) -> HttpResponse:
    """The signed link in an alert's message (`acks.link_token`): the alert and a comment
    box; the POST acknowledges it, as the user when logged in. The link is the proof: it
    works without a login for LINK_DAYS, for that firing only."""
    try:
        alert = acks.alert_of_link(token)
    except acks.AckRefused as refused:
        return render(request, "dashboard/ack.html", {"refused": refused}, status=400)
    comment = ""
    if request.method == "POST":
        comment = request.POST.get("comment", "")[: acks.COMMENT_MAX]
        user = request.user if request.user.is_authenticated else None
        try:
            alert = acks.acknowledge(alert, user, comment, via="link")
        except acks.AckRefused as refused:
            return render(request, "dashboard/ack.html", {"refused": refused}, status=400)
    who = alert.acknowledged_by.get_username() if alert.acknowledged_by else ""
    if alert.acknowledged_at and not who:
        who = "someone with the link in a message"
    context = {"alert": alert, "comment": comment or alert.ack_comment, "who": who}
    return render(request, "dashboard/ack.html", context)


@login_required
@require_POST
def send_test(request: HttpRequest) -> HttpResponse:
    """The "Send a test alert" button (operators): send it now, then back to the alerts
    page saying to whom it went, or why it was not sent."""
    if not can(request.user, SEND_TEST_ALERT):
        return HttpResponse("Operators only.", status=403, content_type="text/plain")
    try:
        channel = request.POST.get("channel") or None
        recipients = send_test_alert_as(request.user, channel)
    except TestAlertRefused as refused:
        messages.error(request, f"Test alert not sent: {refused}.")
    except TooMany as limited:
        messages.error(request, f"Test alert not sent: {limited}")
    except TestAlertLate as late:
        messages.warning(request, f"Test alert not confirmed: {late}.")
    except Exception as error:  # noqa: BLE001 SMTP, network, TLS: said on the page
        messages.error(request, f"Test alert not sent: {one_line(error)}")
    else:
        messages.success(request, f"Test alert sent to {', '.join(recipients)}.")
    return redirect("alerts")


class SilenceForm(forms.Form):
    """A silence starting now for one of the page's durations; blank fields match all."""

    server = forms.ModelChoiceField(
        Server.objects.all(), required=False, empty_label="every server"
    )
    schema = forms.CharField(max_length=64, required=False, empty_value=None)
    table = forms.CharField(max_length=64, required=False, empty_value=None)
    rule = forms.TypedChoiceField(
        choices=lambda: [("", "every rule"), *rule_choices()], required=False, empty_value=None
    )
    duration = forms.ChoiceField(
        choices=[(key, label) for key, (label, _) in DURATIONS.items()],
        initial="4h",
        widget=forms.RadioSelect,
    )
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def scope(self) -> dict:
        return {f: self.cleaned_data[f] for f in SCOPE}

    def ends_at(self, starts_at: datetime) -> datetime:
        _, length = DURATIONS[self.cleaned_data["duration"]]
        return starts_at + length


def linked_scope(request: HttpRequest) -> tuple[SilenceForm, dict]:
    """The form as the link fills it, and the scope it names. What a link names that
    does not exist (a deleted server, a misspelt rule) is left blank for the user."""
    linked = SilenceForm({"duration": "4h", **request.GET.dict()})
    linked.is_valid()
    chosen = {f: linked.cleaned_data.get(f) for f in (*SCOPE, "duration", "comment")}
    initial = {f: value for f, value in chosen.items() if value}
    return SilenceForm(initial=initial), {f: chosen[f] for f in SCOPE}


@login_required
def silence(request: HttpRequest) -> HttpResponse:
    """GET: the form filled from the link, with the open alerts it would hold back.
    POST (operators: `alerts.add_silence`): the silence, from now for the chosen duration."""
    allowed = can(request.user, ADD_SILENCE)
    if request.method == "POST":
        if not allowed:
            return render(request, "dashboard/silence.html", {"allowed": False}, status=403)
        form = SilenceForm(request.POST)
        if form.is_valid():
            return create_silence(request, form)
        scope = {f: form.cleaned_data.get(f) for f in SCOPE}
    else:
        form, scope = linked_scope(request)
    return render(request, "dashboard/silence.html", silence_context(form, scope, allowed))


def silence_context(form: SilenceForm, scope: dict, allowed: bool) -> dict:
    matched = alerts_matched_by(alerts_as_shown().filter(state__in=OPEN), **scope)
    return {
        "form": form,
        "allowed": allowed,
        "matched": matched.order_by("severity", "-started_at")[:PREVIEW],
        "matched_count": matched.count(),
        "everything": all(value is None for value in scope.values()),
    }


def create_silence(request: HttpRequest, form: SilenceForm) -> HttpResponse:
    now = timezone.now()
    silence = Silence.objects.create(
        **form.scope(),
        starts_at=now,
        ends_at=form.ends_at(now),
        comment=form.cleaned_data["comment"],
        created_by=request.user,
    )
    messages.success(
        request, f"Silenced until {timezone.localtime(silence.ends_at):%Y-%m-%d %H:%M %Z}."
    )
    server = form.cleaned_data["server"]
    query = f"?server={server.pk}" if server else ""
    return redirect(f"{reverse('alerts')}{query}")
