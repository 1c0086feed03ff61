"""The server form: the password is write-only, kept when left blank on edit."""

from django import forms

from partdash.servers.models import Server


class ServerForm(forms.ModelForm):
    password = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted and never shown again. Leave blank to keep the current one.",
    )
    clear_password = forms.BooleanField(
        required=False, help_text="Remove the stored password (for accounts without one)."
    )

    class Meta:
        model = Server
        fields = [
            "name",
            "host",
            "port",
            "user",
            "password",
            "clear_password",
            "tls_mode",
            "ssl_ca",
            "poll_interval",
            "enabled",
            "tags",
        ]

    def save(self, commit: bool = True) -> Server:
        server = super().save(commit=False)
        if self.cleaned_data.get("clear_password"):
            server.set_password("")
        elif self.cleaned_data.get("password"):
            server.set_password(self.cleaned_data["password"])
        if commit:
            server.save()
        return server
