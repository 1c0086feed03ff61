"""`python manage.py drf_create_token USER`: a new API token for USER, printed once.

Takes the place of DRF's command of the same name (rest_framework.authtoken is not
installed: its keys are stored in clear) and keeps its output: `Generated token KEY for
user USER`. `-r` is accepted as DRF's was; every call makes a new token, and old ones stay
valid until revoked (the admin's "API tokens", or `--revoke-all`)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from partdash.accounts import audit
from partdash.accounts.models import ApiToken


class Command(BaseCommand):
    help = "Create an API token for a user (printed once; stored hashed)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="what the token is for")
        parser.add_argument(
            "-r", "--reset", action="store_true", help="revoke the user's other tokens first"
        )
        parser.add_argument("--revoke-all", action="store_true", help="revoke, create none")

    @audit.from_command
    def handle(self, *args, username: str, name: str, reset: bool, revoke_all: bool, **options):
        users = get_user_model()
        try:
            user = users._default_manager.get_by_natural_key(username)
        except users.DoesNotExist:
            raise CommandError(f"Cannot create the Token: user {username} does not exist") from None
        if reset or revoke_all:
            tokens = list(ApiToken.objects.active().filter(user=user))
            for token in tokens:  # one by one, each in the audit trail
                token.revoke()
            revoked = len(tokens)
            if revoke_all:
                self.stdout.write(f"Revoked {revoked} tokens of user {username}")
                return
        _, key = ApiToken.issue(user, name=name or "drf_create_token")
        self.stdout.write(f"Generated token {key} for user {username}")
