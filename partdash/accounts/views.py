"""`/tokens/`: a logged-in user's own API tokens: make one (its key shown once), revoke."""

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from partdash.accounts.models import ApiToken


class NewTokenForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, help_text="what it is for")


@login_required
def tokens(request: HttpRequest) -> HttpResponse:
    """GET: the user's tokens. POST `name`: a new one, its key on this response only.
    POST `revoke=ID`: revoke one of the user's own (others' are a 404)."""
    key = None
    form = NewTokenForm()
    if request.method == "POST":
        if "revoke" in request.POST:
            token_id = request.POST["revoke"]
            if not token_id.isdigit():
                return HttpResponse("Bad token id.", status=400, content_type="text/plain")
            get_object_or_404(ApiToken, pk=int(token_id), user=request.user).revoke()
            return redirect("tokens")
        form = NewTokenForm(request.POST)
        if form.is_valid():
            _, key = ApiToken.issue(request.user, name=form.cleaned_data["name"])
            form = NewTokenForm()
    context = {
        "form": form,
        "key": key,
        "tokens": ApiToken.objects.filter(user=request.user).order_by("-created_at"),
    }
    return render(request, "dashboard/tokens.html", context)
