"""`/login/`, with single sign-on's button; `/tokens/`: a logged-in user's own API
tokens: make one (its key shown once), revoke."""

from django import forms
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from partdash.accounts.models import ApiToken


class LoginPage(auth_views.LoginView):
    """The login form; beside it "Sign in with ..." when an OpenID provider is set, and
    why its sign-in failed after one did."""

    template_name = "dashboard/login.html"

    def get_context_data(self, **kwargs):
        return {
            **super().get_context_data(**kwargs),
            "failure_limit": settings.AXES_FAILURE_LIMIT,
            "sign_on": settings.PARTDASH_OIDC_NAME if settings.PARTDASH_OIDC_ISSUER else "",
            "sign_on_failed": self.request.GET.get("sign_on") == "failed",
        }


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
