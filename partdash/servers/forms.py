"""The server form: the password is write-only, kept when left blank on edit (unless the
host, port, user or TLS settings change: then it must be given again, see
`Server.password_reuse`)."""

from django import forms

from partdash.servers.models import Server


class ServerForm(forms.ModelForm):
    password = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted and never shown again. Leave blank to keep the current one; "
        "changing the host, port, user or TLS settings needs it again.",
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
            "tls_approved_fingerprint",
            "poll_interval",
            "enabled",
            "tags",
            "explain_statements",
            "export_tables",
        ]

    def clean(self) -> dict:
        """Apply a new or cleared password before the model's validation, which refuses
        to send the stored one to a changed destination."""
        cleaned = super().clean()
        if cleaned.get("clear_password"):
            self.instance.set_password("")
        elif cleaned.get("password"):
            self.instance.set_password(cleaned["password"])
        return cleaned
