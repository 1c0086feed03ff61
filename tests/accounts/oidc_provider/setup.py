"""Prepare the provider's database: its tables and the one client, partdash (argv: client
id, secret, redirect URI)."""

import sys

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from oauth2_provider.models import Application  # noqa: E402

call_command("migrate", verbosity=0)
client_id, secret, redirect = sys.argv[1:4]
Application.objects.create(
    name="partdash",
    client_id=client_id,
    client_secret=secret,
    client_type=Application.CLIENT_CONFIDENTIAL,
    authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
    redirect_uris=redirect,
    algorithm=Application.RS256_ALGORITHM,
    skip_authorization=True,
)
