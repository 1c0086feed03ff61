"""`manage.py check --deploy`: the encryption key kept beside the database it protects.

`make up` moves a key it finds in var/partdash.env to a file outside var/; an install run
otherwise (by hand, a service manager) is told here, since a copy of var/ would then
carry the encrypted passwords and the key that decrypts them."""

from django.conf import settings
from django.core.checks import Tags, Warning, register


@register(Tags.security, deploy=True)
def encryption_key_beside_the_database(app_configs, **kwargs) -> list[Warning]:
    env_file = settings.VAR_DIR / "partdash.env"
    try:
        lines = env_file.read_text().splitlines()
    except OSError:
        return []
    if not any(line.startswith("PARTDASH_ENCRYPTION_KEYS=") for line in lines):
        return []
    return [
        Warning(
            f"The encryption key is kept in {env_file}, beside the database: a copy of "
            "var/ can decrypt every stored server password.",
            hint="Run `make up` once (it moves the key to a private file outside var/), or "
            "move it to a file named by PARTDASH_ENCRYPTION_KEYS_FILE (docs: Production, "
            "Secrets).",
            id="partdash.W001",
        )
    ]
