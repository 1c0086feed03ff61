"""partdash settings: every value comes from an environment variable with a default
that works on a laptop (SQLite under var/, Redis on localhost, console email).

`var/partdash.env` (written by `make up`) is read first when it exists, so the CLI,
the worker and the web server all share the same generated keys.
"""

import os
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from partdash.lib.addresses import parse_networks
from partdash.lib.private_files import PRIVATE_UMASK, private_directory, read_keys_file, tighten

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(environ.Env().str("PARTDASH_VAR_DIR", default=str(BASE_DIR / "var")))

env = environ.Env()
# var/ holds the metadata store (API tokens, encrypted passwords), the generated keys and
# the logs: whatever a partdash process creates is its owner's alone, whichever process
# comes first (`make up`, or manage.py run by hand), and an older var/ is tightened.
os.umask(PRIVATE_UMASK)
private_directory(VAR_DIR)
tighten(VAR_DIR / "partdash.env")
(VAR_DIR / "static").mkdir(exist_ok=True)
if (VAR_DIR / "partdash.env").exists():
    environ.Env.read_env(VAR_DIR / "partdash.env", overwrite=False)

# Insecure values for development only; refused when DEBUG is off.
DEV_SECRET_KEY = "partdash-dev-secret-key-do-not-use-in-production"
DEV_ENCRYPTION_KEY = "cGFydGRhc2gtZGV2LWtleS1kby1ub3QtdXNlLWl0ISE="

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default=DEV_SECRET_KEY)
# Fernet keys: the first encrypts, all decrypt (key rotation). Comma-separated in
# PARTDASH_ENCRYPTION_KEYS, or in a file of their own (PARTDASH_ENCRYPTION_KEYS_FILE) kept
# apart from var/, so that a backup of the database cannot decrypt the passwords in it.
PARTDASH_ENCRYPTION_KEYS_FILE = env.str("PARTDASH_ENCRYPTION_KEYS_FILE", default="")
if PARTDASH_ENCRYPTION_KEYS_FILE and env.str("PARTDASH_ENCRYPTION_KEYS", default=""):
    raise ImproperlyConfigured(
        "PARTDASH_ENCRYPTION_KEYS and PARTDASH_ENCRYPTION_KEYS_FILE are both set: keep one "
        "(once the keys are in the file, remove PARTDASH_ENCRYPTION_KEYS from "
        "var/partdash.env and the environment)."
    )
PARTDASH_ENCRYPTION_KEYS = (
    read_keys_file(PARTDASH_ENCRYPTION_KEYS_FILE)
    if PARTDASH_ENCRYPTION_KEYS_FILE
    else env.list("PARTDASH_ENCRYPTION_KEYS", default=[DEV_ENCRYPTION_KEY])
)

if not DEBUG and SECRET_KEY == DEV_SECRET_KEY:
    raise ImproperlyConfigured(
        "SECRET_KEY is the built-in development key; set SECRET_KEY (or run `make up`, "
        "which writes var/partdash.env) or set DEBUG=1 for development."
    )
if not DEBUG and DEV_ENCRYPTION_KEY in PARTDASH_ENCRYPTION_KEYS:
    raise ImproperlyConfigured(
        "PARTDASH_ENCRYPTION_KEYS uses the built-in development key; set it to a Fernet key "
        "(`make up` writes one to var/partdash.env; see README, Secrets)."
    )

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    # Not rest_framework.authtoken: it keeps keys in clear; partdash.accounts hashes them.
    "axes",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    # The audit trail's changes (partdash.accounts.audit), into accounts.AuditEntry.
    "auditlog",
    "mozilla_django_oidc",  # OpenID Connect sign-on (partdash.accounts.oidc)
    "partdash.servers",
    "partdash.metrics",
    "partdash.dashboard",
    "partdash.alerts",
    "partdash.accounts",
    "partdash.polling",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "partdash.body_limit.BodyLimitMiddleware",  # 413 before a large body is read
    "partdash.static_serving.StaticWithoutSourceMaps",  # whitenoise, less *.map
    # An ETag on every GET answer (the API's per-poll lists set their own), and a 304
    # for a client that sends it back.
    "django.middleware.http.ConditionalGetMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Who acts and from where, for the audit trail (the user is read when a change is).
    "partdash.accounts.audit.AuditMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "partdash.headers.ContentSecurityPolicyMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "partdash.urls"
WSGI_APPLICATION = "partdash.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'partdash.sqlite3'}")
}
# Each request opened its own connection to the store and closed it: on PostgreSQL a
# server process started, and partdash's session set up, for each of the fleet page's
# four requests. A connection is now kept this many seconds and checked before it is
# reused (a store restarted meanwhile costs a reconnect, not an error); 0: one per
# request, as behind a pooler that wants them short. `?conn_max_age=` in DATABASE_URL
# wins.
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("PARTDASH_DB_CONN_MAX_AGE", default=60))
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A database file from before the umask above; SQLite gives -wal and -shm its mode.
    sqlite_file = str(DATABASES["default"]["NAME"])
    if sqlite_file not in ("", ":memory:"):
        tighten(*(Path(sqlite_file + end) for end in ("", "-wal", "-shm")))
    # The worker, beat and web server write concurrently: wait for locks, use WAL. With
    # WAL, synchronous=NORMAL syncs at checkpoints rather than at every commit: a power
    # loss can lose the last polls' writes, never corrupt the file (SQLite's own advice
    # for WAL); a commit, most of a quiet poll's storing, no longer waits for the disk.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
elif DATABASES["default"]["ENGINE"] == "django.db.backends.mysql":
    # PyMySQL (already a dependency) stands in for mysqlclient, which needs a C build.
    import pymysql

    pymysql.version_info = (2, 2, 1, "final", 0)  # the mysqlclient version Django requires
    pymysql.install_as_MySQLdb()
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("charset", "utf8mb4")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "frontend" / "dist"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Sessions in the database under a hash of their key: a copy of it logs nobody in.
SESSION_ENGINE = "partdash.accounts.sessions"
SESSION_COOKIE_HTTPONLY = True

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"

# Password guessing (django-axes): after AXES_FAILURE_LIMIT failed logins from one address
# for one user name, that pair is refused for PARTDASH_LOCKOUT_MINUTES, /login/ and
# /admin/login/ alike: someone guessing `dba` does not lock `admin` out of a shared
# address. An address that fails PARTDASH_LOGIN_ADDRESS_FAILURE_LIMIT times whatever the
# names (spraying) is refused for every name. Lift it early with
# `python manage.py axes_reset` (or axes_reset_ip ADDRESS, axes_reset_username NAME).
AUTHENTICATION_BACKENDS = [
    "partdash.accounts.backends.LockoutBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("PARTDASH_LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = env.float("PARTDASH_LOCKOUT_MINUTES", default=15.0) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
PARTDASH_LOGIN_ADDRESS_FAILURE_LIMIT = env.int("PARTDASH_LOGIN_ADDRESS_FAILURE_LIMIT", default=50)
# Wrong API tokens per address within PARTDASH_LOCKOUT_MINUTES before that address's
# token requests get 429 (partdash.accounts.authentication).
PARTDASH_TOKEN_FAILURE_LIMIT = env.int("PARTDASH_TOKEN_FAILURE_LIMIT", default=20)
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "partdash.accounts.lockout.locked_out"
AXES_VERBOSE = False
# Behind a reverse proxy (PARTDASH_TRUSTED_PROXY=1), the client's address is the last
# X-Forwarded-For entry the proxy appended; otherwise the connection's own address.
PARTDASH_TRUSTED_PROXY = env.bool("PARTDASH_TRUSTED_PROXY", default=False)
AXES_CLIENT_IP_CALLABLE = "partdash.accounts.backends.client_address"

# Sign-on from a directory (docs/access.md, "Single sign-on"): with PARTDASH_LDAP_URI set,
# /login/ also takes directory users (django-auth-ldap, partdash.accounts.directory); the
# groups PARTDASH_LDAP_{VIEWER,OPERATOR,ADMIN}_GROUP (DNs of groupOfNames entries) give the
# role at each login, and a user in none of them cannot log in. Local accounts still work.
PARTDASH_LDAP_URI = env.str("PARTDASH_LDAP_URI", default="")
if PARTDASH_LDAP_URI:
    from partdash.accounts.directory_settings import ldap_settings

    try:
        globals().update(ldap_settings(env))
    except ValueError as _bad:
        raise ImproperlyConfigured(str(_bad)) from None
    AUTHENTICATION_BACKENDS.insert(1, "partdash.accounts.directory.DirectoryBackend")

# Sign-on through an OpenID Connect provider (docs/access.md, "OpenID Connect"): with
# PARTDASH_OIDC_ISSUER set, the login page offers "Sign in with PARTDASH_OIDC_NAME"
# (mozilla-django-oidc; endpoints from the issuer's discovery document); the groups claim
# gives the role at each sign-in, and someone in none of the three groups cannot sign in.
PARTDASH_OIDC_ISSUER = env.str("PARTDASH_OIDC_ISSUER", default="")
PARTDASH_OIDC_NAME = env.str("PARTDASH_OIDC_NAME", default="single sign-on")
PARTDASH_OIDC_USERNAME_CLAIM = env.str("PARTDASH_OIDC_USERNAME_CLAIM", default="preferred_username")
PARTDASH_OIDC_GROUPS_CLAIM = env.str("PARTDASH_OIDC_GROUPS_CLAIM", default="groups")
PARTDASH_OIDC_ROLE_GROUPS = {
    "viewers": env.str("PARTDASH_OIDC_VIEWER_GROUP", default=""),
    "operators": env.str("PARTDASH_OIDC_OPERATOR_GROUP", default=""),
    "admins": env.str("PARTDASH_OIDC_ADMIN_GROUP", default=""),
}
OIDC_RP_CLIENT_ID = env.str("PARTDASH_OIDC_CLIENT_ID", default="")
_oidc_secret_file = env.str("PARTDASH_OIDC_CLIENT_SECRET_FILE", default="")
OIDC_RP_CLIENT_SECRET = (
    Path(_oidc_secret_file).read_text().strip()
    if _oidc_secret_file
    else env.str("PARTDASH_OIDC_CLIENT_SECRET", default="")
)
OIDC_RP_SCOPES = env.str("PARTDASH_OIDC_SCOPES", default="openid email profile")
OIDC_RP_SIGN_ALGO = env.str("PARTDASH_OIDC_SIGN_ALGO", default="RS256")
OIDC_USE_PKCE = True
OIDC_TIMEOUT = env.float("PARTDASH_OIDC_TIMEOUT", default=10.0)
# The provider's TLS certificate is verified against this CA file, or the system's CAs.
OIDC_VERIFY_SSL = env.str("PARTDASH_OIDC_CA_FILE", default="") or True
OIDC_AUTHENTICATE_CLASS = "partdash.accounts.oidc.ProviderSignIn"
LOGIN_REDIRECT_URL_FAILURE = "/login/?sign_on=failed"
if PARTDASH_OIDC_ISSUER and not any(PARTDASH_OIDC_ROLE_GROUPS.values()):
    raise ImproperlyConfigured(
        "PARTDASH_OIDC_ISSUER is set but none of PARTDASH_OIDC_VIEWER_GROUP, "
        "PARTDASH_OIDC_OPERATOR_GROUP, PARTDASH_OIDC_ADMIN_GROUP: nobody could sign in."
    )
# Asked at every login, it answers only a provider's callback (and only when configured).
AUTHENTICATION_BACKENDS.insert(-1, "partdash.accounts.oidc.ProviderBackend")

# The audit trail (partdash.accounts.audit, docs/access.md): django-auditlog writes
# accounts.AuditEntry, JSON before/after per field, secrets as "(changed)"; entries older
# than PARTDASH_AUDIT_KEEP_DAYS are deleted by the store's downsampling job.
AUDITLOG_LOGENTRY_MODEL = "accounts.AuditEntry"
# django-auditlog's own migrations make its LogEntry's table whether or not it is swapped
# (their CreateModel does not say `swappable`): an unused table whose key on the content
# types stops PostgreSQL's TRUNCATE of them. Its model is swapped out, so nothing to make.
MIGRATION_MODULES = {"auditlog": None}
AUDITLOG_STORE_JSON_CHANGES = True
AUDITLOG_MASK_CALLABLE = "partdash.accounts.audit.changed"
AUDITLOG_DISABLE_ON_RAW_SAVE = True  # loaddata
PARTDASH_AUDIT_KEEP_DAYS = env.int("PARTDASH_AUDIT_KEEP_DAYS", default=365)

# HTTPS hardening: on by default when DEBUG is off; PARTDASH_HTTPS=0 for plain-HTTP
# local use such as `make up`.
HTTPS = env.bool("PARTDASH_HTTPS", default=not DEBUG)
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS and env.bool("SECURE_SSL_REDIRECT", default=True)
# X-Forwarded-Proto says "this came over HTTPS" only when a proxy we trust sets it (and
# strips what clients send); without one, any client could claim it.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if PARTDASH_TRUSTED_PROXY else None
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# partdash.headers: the pages load scripts, styles, images and data from this origin only.
CONTENT_SECURITY_POLICY = env.str(
    "PARTDASH_CSP",
    default="default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'",
)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "partdash.accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["partdash.accounts.permissions.RolePermission"],
    # Per user (whatever the credential), per token, and per address for anonymous
    # requests; over the rate: 429 with Retry-After. The pages' auto-refresh asks a
    # handful of requests a minute per open tab.
    "DEFAULT_THROTTLE_CLASSES": [
        "partdash.accounts.throttling.AnonThrottle",
        "partdash.accounts.throttling.UserThrottle",
        "partdash.accounts.throttling.TokenThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env.str("PARTDASH_API_RATE_ANON", default="60/min"),
        "user": env.str("PARTDASH_API_RATE_USER", default="1200/min"),
        "token": env.str("PARTDASH_API_RATE_TOKEN", default="600/min"),
    },
    # The client's address for anonymous throttling: X-Forwarded-For only behind a proxy.
    "NUM_PROXIES": 1 if PARTDASH_TRUSTED_PROXY else 0,
    "DEFAULT_SCHEMA_CLASS": "partdash.api.schema.PartdashSchema",
    # The browsable API for logged-in people, production included (README, "API docs").
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "partdash.api.negotiation.BrowsableForUsers",
    # Bounded bodies, and JSON errors for everything (partdash.api.errors).
    "DEFAULT_PARSER_CLASSES": [
        "partdash.api.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "EXCEPTION_HANDLER": "partdash.api.errors.api_exception_handler",
}
# Request bodies above this are refused (the API's JSON parser checks it too).
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("PARTDASH_MAX_BODY_BYTES", default=1024 * 1024)
# Multipart files too (partdash.body_limit refuses a larger body, files included).
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE
SPECTACULAR_SETTINGS = {
    "TITLE": "partdash API",
    "DESCRIPTION": (
        "Partition health of MySQL and MariaDB servers. Every endpoint needs a login or a "
        "token (`Authorization: Token KEY`). Viewers (and any user in no group) read; "
        "operators also write servers, polls, alert rules and silences (and maintenance "
        "windows and alert channels, and acknowledge alerts), and choose the "
        "tables /metrics exports per partition; admins (staff) also manage users and tokens, "
        "in the admin. Each operation says who may call it."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # /api/schema/ like the rest of the API: a login or a token.
    "SERVE_PERMISSIONS": ["partdash.accounts.permissions.RolePermission"],
    # Swagger UI from drf-spectacular-sidecar's static files: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # One name per choice set where several fields use it (a rule's `rule` and a
    # channel's `rules`; an alert's `severity` and a channel's `min_severity`).
    "ENUM_NAME_OVERRIDES": {
        "RuleEnum": "partdash.alerts.models.rule_choices",
        "SeverityEnum": "partdash.alerts.models.Severity",
    },
}

# Celery: Redis broker, beat dispatches due polls from one static entry.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="redis://127.0.0.1:6379/0")
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0.2}
# A worker child whose peak memory went over this (MB; Celery reads the child's peak RSS
# after each task) is replaced by a fresh one once its task is done: what a child keeps
# between polls is bounded (PARTDASH_REMEMBERED_PARTITIONS, 130-240 MB at its bound: 32 MB
# per 32,000 partitions read back, up to 60 MB once polls compared and analysed them; a
# 64,000-partition poll peaking about 290 MB above it), anything beyond is given back.
# 0: never.
PARTDASH_WORKER_MAX_MEMORY_MB = env.int("PARTDASH_WORKER_MAX_MEMORY_MB", default=1536)
CELERY_WORKER_MAX_MEMORY_PER_CHILD = PARTDASH_WORKER_MAX_MEMORY_MB * 1024 or None  # KiB
# Redis for the per-server poll lock (defaults to the broker's Redis).
PARTDASH_REDIS_URL = env.str("PARTDASH_REDIS_URL", default=CELERY_BROKER_URL)
# How often beat queues the dispatch of due polls: a poll starts up to this late, plus
# its wait for a free slot. Its query is about 1 ms at 1,000 servers with none due; run
# as a Celery task, a dispatch costs a worker about 20 ms of CPU (2% of a core at one a
# second; measured side by side in docs/benchmarks.md).
PARTDASH_DISPATCH_SECONDS = env.float("PARTDASH_DISPATCH_SECONDS", default=1.0)
# A worker that answers no ping, or consumes nothing while tasks wait (a free slot in its
# pool), for this long is restarted by its watcher: `make up`'s supervisor, or
# `manage.py checkworker` (systemd, Docker). See docs/production.md, "What watches what".
PARTDASH_WORKER_STALL_SECONDS = env.float("PARTDASH_WORKER_STALL_SECONDS", default=120.0)
# Requested (GET) after each of beat's watch cycles in which every server's polls ran
# (a dead man's switch outside partdash); its timeout. Unset: nothing is requested.
PARTDASH_HEARTBEAT_URL = env.str("PARTDASH_HEARTBEAT_URL", default="")
PARTDASH_HEARTBEAT_TIMEOUT = env.float("PARTDASH_HEARTBEAT_TIMEOUT", default=5.0)
PARTDASH_DEFAULT_POLL_INTERVAL = env.int("PARTDASH_DEFAULT_POLL_INTERVAL", default=60)
# Upper bound for one poll, whatever the interval (seconds).
PARTDASH_POLL_TIME_LIMIT = env.int("PARTDASH_POLL_TIME_LIMIT", default=300)
# A server whose polls keep failing is polled at its interval doubled from the second
# failure in a row, up to this; and at most this many of a worker's slots poll such
# servers at once (0: half the worker's concurrency, at least one), so a fleet of
# unreachable servers never delays the healthy ones.
PARTDASH_POLL_BACKOFF_MAX_SECONDS = env.int("PARTDASH_POLL_BACKOFF_MAX_SECONDS", default=600)
PARTDASH_FAILING_POLL_SLOTS = env.int("PARTDASH_FAILING_POLL_SLOTS", default=0)
# "Poll now" (API, admin, a server's save) queues one poll per server while the one it
# queued is queued or running; 0 turns that off (every request queues a poll).
PARTDASH_POLL_NOW_DEBOUNCE_SECONDS = env.int("PARTDASH_POLL_NOW_DEBOUNCE_SECONDS", default=5)
# The tablespace list and file I/O are read by buckets, only where a bucket's aggregate
# changed (partdash.mysql.incremental); every row is read again once what a process
# remembers is older than PARTDASH_FULL_READ_SECONDS, which bounds how long a change
# that leaves its bucket's aggregate equal (a SHA-1 collision, about 2^-64) can go unseen.
PARTDASH_INCREMENTAL_READS = env.bool("PARTDASH_INCREMENTAL_READS", default=True)
PARTDASH_FULL_READ_SECONDS = env.int("PARTDASH_FULL_READ_SECONDS", default=3600)
# What a poll leaves for the next poll of its server (the wide sources' rows by bucket,
# the stored figures, the rules version) is also written to Redis after each stored
# poll, so whichever worker child or host polls the server next continues from it
# (`partdash.polling.pollmemory`): 0.75-1 MB per 32,000 partitions, kept for
# PARTDASH_POLL_MEMORY_SECONDS after the last poll.
PARTDASH_SHARE_POLL_MEMORY = env.bool("PARTDASH_SHARE_POLL_MEMORY", default=True)
PARTDASH_POLL_MEMORY_SECONDS = env.int("PARTDASH_POLL_MEMORY_SECONDS", default=6 * 3600)
# After writes, a poll reads the tablespace list on a second, short-lived session to the
# server, beside file I/O on its own (partdash.collector.collect): off, one session only.
PARTDASH_SECOND_SESSION = env.bool("PARTDASH_SECOND_SESSION", default=True)
# While that second session reads the tablespace list, the poll stores, analyses and
# evaluates as if the list had not changed, and commits once the list says it did not
# (otherwise rolls back and stores it again): README, "Storing while the list is read".
PARTDASH_STORE_WHILE_READING = env.bool("PARTDASH_STORE_WHILE_READING", default=True)
# What one polling process (a worker child) remembers between polls, in partitions over
# every server it polled; past it, the least recently polled servers are forgotten.
# 128,000 holds a 64,000-partition server twice over, or three of 32,000, whole; at
# 1,000 servers a child peaked at 262 MB with it, at 374-378 MB with 256,000 (docs/
# benchmarks.md, stop 58).
PARTDASH_REMEMBERED_PARTITIONS = env.int("PARTDASH_REMEMBERED_PARTITIONS", default=128_000)
# Tables whose definitions one poll may read (each read opens the table once); the rest
# follow in the next polls.
PARTDASH_DEFINITIONS_PER_POLL = env.int("PARTDASH_DEFINITIONS_PER_POLL", default=1000)
# INNODB_SYS_TABLESTATS (MODIFIED_COUNTER, AUTOINC): InnoDB fills it by loading every
# table it has into its dictionary cache, which reads pages of every partition evicted
# from that cache. `auto`: read when rows changed since the last read and the cache holds
# every InnoDB table (so the read loads none); `on`: whenever rows changed; `off`: never.
PARTDASH_READ_TABLESTATS = env.str("PARTDASH_READ_TABLESTATS", default="auto").lower()
PARTDASH_READ_TABLESTATS = {"1": "on", "true": "on", "yes": "on", "0": "off", "false": "off"}.get(
    PARTDASH_READ_TABLESTATS, PARTDASH_READ_TABLESTATS
)
if PARTDASH_READ_TABLESTATS not in ("auto", "on", "off"):
    raise ImproperlyConfigured("PARTDASH_READ_TABLESTATS must be auto, on or off")
# Read counters grow by a few pages for every partition of a table that is opened; a
# partition's reads are sampled once they reach the next multiple of this many page
# reads (any growth by this many or more is sampled).
PARTDASH_MIN_SAMPLED_READS = env.int("PARTDASH_MIN_SAMPLED_READS", default=16)
# Hotspots and compression failure rates look at this much recent activity.
PARTDASH_HOTSPOT_WINDOW_SECONDS = env.int("PARTDASH_HOTSPOT_WINDOW_SECONDS", default=3600)
# How long a partition must stay hot before it is flagged, in whole slots of the window
# (a twelfth of it); unset, one slot, so it scales with the window (see
# partdash.metrics.analysis.hold_seconds). A hold longer than the window could never be
# met: refused here rather than silently turning hotspots off.
PARTDASH_HOTSPOT_HOLD_SECONDS = env.int("PARTDASH_HOTSPOT_HOLD_SECONDS", default=None)
if PARTDASH_HOTSPOT_HOLD_SECONDS is not None and not (
    0 < PARTDASH_HOTSPOT_HOLD_SECONDS <= PARTDASH_HOTSPOT_WINDOW_SECONDS
):
    raise ImproperlyConfigured(
        f"PARTDASH_HOTSPOT_HOLD_SECONDS ({PARTDASH_HOTSPOT_HOLD_SECONDS}) must be between 1 and "
        f"PARTDASH_HOTSPOT_WINDOW_SECONDS ({PARTDASH_HOTSPOT_WINDOW_SECONDS}): a partition "
        "cannot be seen hot for longer than the window it is judged over"
    )
# The store's downsampling (`metrics.downsampling`; named RETENTION when published, before
# partition retention policies): every poll for RAW days, hourly until HOURLY days, daily
# until DAILY days.
PARTDASH_RETENTION_RAW_DAYS = env.int("PARTDASH_RETENTION_RAW_DAYS", default=7)
PARTDASH_RETENTION_HOURLY_DAYS = env.int("PARTDASH_RETENTION_HOURLY_DAYS", default=90)
PARTDASH_RETENTION_DAILY_DAYS = env.int("PARTDASH_RETENTION_DAILY_DAYS", default=730)
PARTDASH_RETENTION_EVERY_SECONDS = env.int("PARTDASH_RETENTION_EVERY_SECONDS", default=3600)
# History buckets (5 minutes, hourly, daily) are stored this often, so a chart of a long
# range reads them rather than every poll (partdash.metrics.rollups).
PARTDASH_ROLLUP_EVERY_SECONDS = env.int("PARTDASH_ROLLUP_EVERY_SECONDS", default=300)
# Statements per digest (performance_schema's digest summary, `mysql.sources.statements`):
# read at most this often per server (and on its first poll), at most MAX_ROWS digests a
# read (the costliest); EXPLAIN, where a server opts in, at most EXPLAINS statements a
# read, each under EXPLAIN_MS milliseconds (max_statement_time / MAX_EXECUTION_TIME).
PARTDASH_STATEMENTS_EVERY_SECONDS = env.int("PARTDASH_STATEMENTS_EVERY_SECONDS", default=300)
PARTDASH_STATEMENTS_MAX_ROWS = env.int("PARTDASH_STATEMENTS_MAX_ROWS", default=1000)
PARTDASH_STATEMENTS_EXPLAINS = env.int("PARTDASH_STATEMENTS_EXPLAINS", default=50)
PARTDASH_STATEMENTS_EXPLAIN_MS = env.int("PARTDASH_STATEMENTS_EXPLAIN_MS", default=1000)
# Timeouts when talking to a monitored server (seconds).
PARTDASH_CONNECT_TIMEOUT = env.int("PARTDASH_CONNECT_TIMEOUT", default=5)
PARTDASH_READ_TIMEOUT = env.int("PARTDASH_READ_TIMEOUT", default=30)
# Rows one query on a monitored server may return: a source lists one row per partition
# (64,000 on the largest servers partdash is measured on), so only a hostile or broken
# server sends more; reading stops there, and the poll is stored as degraded.
PARTDASH_MAX_ROWS_PER_SOURCE = env.int("PARTDASH_MAX_ROWS_PER_SOURCE", default=500_000)
# Bytes one query's answer may take (a few rows can be huge: one hostile 1 GB row). The
# largest honest answer is the bucket aggregates of a 64,000-partition server, a few MB
# (GROUP_CONCAT, at most 64 MiB).
PARTDASH_MAX_BYTES_PER_SOURCE = env.int("PARTDASH_MAX_BYTES_PER_SOURCE", default=128 * 2**20)
# Test connection (the admin): runs in a web request, so it ends after this many seconds
# whatever the server does, and each user runs at most PARTDASH_TEST_CONNECTION_PER_USER
# at once and PARTDASH_TEST_CONNECTION_PER_MINUTE a minute (8 web threads serve everyone).
PARTDASH_TEST_CONNECTION_SECONDS = env.float("PARTDASH_TEST_CONNECTION_SECONDS", default=20.0)
PARTDASH_TEST_CONNECTION_PER_USER = env.int("PARTDASH_TEST_CONNECTION_PER_USER", default=2)
PARTDASH_TEST_CONNECTION_PER_MINUTE = env.int("PARTDASH_TEST_CONNECTION_PER_MINUTE", default=10)
# Test alerts sent from a web request (the alerts page, the API, the admin's channel action):
# the web thread waits at most PARTDASH_TEST_ALERT_SECONDS for the answer (a channel's
# sender starts in 0.35 s and sends in well under a second to a service that answers); each
# user sends at most PARTDASH_TEST_ALERT_PER_USER at once and PARTDASH_TEST_ALERT_PER_MINUTE
# a minute (10 unlimited tests to a slow webhook held all 8 web threads for 31 s).
PARTDASH_TEST_ALERT_SECONDS = env.float("PARTDASH_TEST_ALERT_SECONDS", default=10.0)
PARTDASH_TEST_ALERT_PER_USER = env.int("PARTDASH_TEST_ALERT_PER_USER", default=2)
PARTDASH_TEST_ALERT_PER_MINUTE = env.int("PARTDASH_TEST_ALERT_PER_MINUTE", default=10)
PARTDASH_STATEMENT_TIMEOUT = env.int("PARTDASH_STATEMENT_TIMEOUT", default=20)
PARTDASH_LOCK_WAIT_TIMEOUT = env.int("PARTDASH_LOCK_WAIT_TIMEOUT", default=3)
# Addresses partdash may connect to (partdash.lib.addresses): CIDR lists or `loopback`,
# `link-local`, `private`; the deny list wins, a non-empty allow list admits only itself.
PARTDASH_CONNECT_ALLOW = env.list("PARTDASH_CONNECT_ALLOW", default=[])
PARTDASH_CONNECT_DENY = env.list("PARTDASH_CONNECT_DENY", default=[])
# Alert channels answer to both, and reach loopback, link-local and metadata addresses
# only where this names them (CIDR list or `loopback`, ...; partdash.lib.addresses).
PARTDASH_CHANNEL_ALLOW = env.list("PARTDASH_CHANNEL_ALLOW", default=[])
for _setting in ("PARTDASH_CONNECT_ALLOW", "PARTDASH_CONNECT_DENY", "PARTDASH_CHANNEL_ALLOW"):
    try:
        parse_networks(globals()[_setting], _setting)
    except ValueError as _bad:
        raise ImproperlyConfigured(str(_bad)) from None

# Email: console backend unless EMAIL_HOST is set.
EMAIL_HOST = env.str("EMAIL_HOST", default="")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", default=False)  # STARTTLS, usually port 587
EMAIL_USE_SSL = env.bool("EMAIL_USE_SSL", default=False)  # TLS from the start, port 465
# Seconds for each SMTP socket operation: a hung mail server fails a delivery attempt
# (recorded, retried) instead of holding a worker.
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=20)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured(
        "EMAIL_USE_TLS (STARTTLS) and EMAIL_USE_SSL (implicit TLS) are both set: keep one."
    )
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="partdash@localhost")
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend"
)
ALERT_EMAILS = env.list("ALERT_EMAILS", default=[])
# Links in alert emails point under this address.
PARTDASH_BASE_URL = env.str("PARTDASH_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")
# Alerts still firing are reminded of, one digest per server, this often.
PARTDASH_ALERT_REPEAT_HOURS = env.float("PARTDASH_ALERT_REPEAT_HOURS", default=24.0)
# One expansion of a maintenance window's rule stops past this (or its occurrence and
# calendar limits, partdash.alerts.windows.Walk): a valid weekly rule takes under 1 ms.
PARTDASH_WINDOW_EXPANSION_MS = env.int("PARTDASH_WINDOW_EXPANSION_MS", default=250)
PARTDASH_ALERT_REMINDER_EVERY_SECONDS = env.float(
    "PARTDASH_ALERT_REMINDER_EVERY_SECONDS", default=300.0
)
# Delivery of alert emails (partdash.alerts.delivery). A worker holds a claimed email
# for the lease; a worker killed mid-send leaves it to be sent again once the lease ends,
# so the lease must outlast one send (a handful of SMTP round trips of EMAIL_TIMEOUT).
PARTDASH_ALERT_CLAIM_LEASE_SECONDS = env.float("PARTDASH_ALERT_CLAIM_LEASE_SECONDS", default=300.0)
# How often beat sweeps the outbox for what a killed or absent worker left behind.
PARTDASH_ALERT_SWEEP_SECONDS = env.float("PARTDASH_ALERT_SWEEP_SECONDS", default=30.0)
# After a failed attempt, the next waits this long, doubling up to an hour; after
# PARTDASH_ALERT_MAX_ATTEMPTS attempts an email is given up (its last error stays shown).
PARTDASH_ALERT_RETRY_SECONDS = env.float("PARTDASH_ALERT_RETRY_SECONDS", default=30.0)
PARTDASH_ALERT_MAX_ATTEMPTS = env.int("PARTDASH_ALERT_MAX_ATTEMPTS", default=30)
# A channel's message (Slack, Teams, a webhook...) is sent by a process of its own
# (partdash.alerts.channel_send), killed past this many seconds; the attempt then counts
# as failed and is retried like an email.
PARTDASH_ALERT_CHANNEL_TIMEOUT_SECONDS = env.float(
    "PARTDASH_ALERT_CHANNEL_TIMEOUT_SECONDS", default=30.0
)
# The written working set's forecast (partdash.health.forecast): a line through its
# sizes over the last PARTDASH_WORKING_SET_FORECAST_DAYS, crossing this fraction of
# innodb_buffer_pool_size; fitted again at most every ..._EVERY_SECONDS.
PARTDASH_WORKING_SET_FORECAST_DAYS = env.float("PARTDASH_WORKING_SET_FORECAST_DAYS", default=7.0)
PARTDASH_WORKING_SET_FORECAST_FRACTION = env.float(
    "PARTDASH_WORKING_SET_FORECAST_FRACTION", default=1.0
)
PARTDASH_WORKING_SET_FORECAST_EVERY_SECONDS = env.float(
    "PARTDASH_WORKING_SET_FORECAST_EVERY_SECONDS", default=600.0
)
# `working_set_forecast` fires when the forecast crossing is fewer days away than this.
PARTDASH_ALERT_WORKING_SET_FORECAST_DAYS = env.float(
    "PARTDASH_ALERT_WORKING_SET_FORECAST_DAYS", default=14.0
)
# Alertmanager (partdash.alerts.alertmanager): its base URL (http://host:9093; user and
# password in it are sent as basic authentication); every firing alert is pushed again
# every PARTDASH_ALERTMANAGER_PUSH_SECONDS, and a resolved one for
# PARTDASH_ALERTMANAGER_RESOLVED_MINUTES after it resolved. Unset: nothing is pushed.
PARTDASH_ALERTMANAGER_URL = env.str("PARTDASH_ALERTMANAGER_URL", default="")
PARTDASH_ALERTMANAGER_PUSH_SECONDS = env.float("PARTDASH_ALERTMANAGER_PUSH_SECONDS", default=60.0)
PARTDASH_ALERTMANAGER_RESOLVED_MINUTES = env.float(
    "PARTDASH_ALERTMANAGER_RESOLVED_MINUTES", default=15.0
)
PARTDASH_ALERTMANAGER_TIMEOUT = env.float("PARTDASH_ALERTMANAGER_TIMEOUT", default=10.0)
# Transitions an email shows in full; the rest of a storm is counted, with a link.
PARTDASH_ALERT_EMAIL_DETAILED = env.int("PARTDASH_ALERT_EMAIL_DETAILED", default=50)
# Alert rules (partdash.alerts.rules): a condition fires after holding on this many
# consecutive polls and resolves after being clear on as many.
PARTDASH_ALERT_FOR_POLLS = env.int("PARTDASH_ALERT_FOR_POLLS", default=2)
# A firing alert clears below this fraction of its threshold (above threshold/ratio where
# lower is worse): a value hovering at the limit sends nothing more.
PARTDASH_ALERT_CLEAR_RATIO = env.float("PARTDASH_ALERT_CLEAR_RATIO", default=0.9)
# Size rules' thresholds: a partition's data + index bytes, a table's, a table's growth.
PARTDASH_ALERT_PARTITION_SIZE_BYTES = env.int(
    "PARTDASH_ALERT_PARTITION_SIZE_BYTES", default=50 << 30
)
PARTDASH_ALERT_TABLE_SIZE_BYTES = env.int("PARTDASH_ALERT_TABLE_SIZE_BYTES", default=1 << 40)
PARTDASH_ALERT_TABLE_GROWTH_BYTES_PER_DAY = env.int(
    "PARTDASH_ALERT_TABLE_GROWTH_BYTES_PER_DAY", default=10 << 30
)
# `stale_polls`: no successful poll for this many poll intervals; beat checks this often.
PARTDASH_ALERT_STALE_POLL_INTERVALS = env.float("PARTDASH_ALERT_STALE_POLL_INTERVALS", default=3)
PARTDASH_ALERT_STALE_CHECK_SECONDS = env.float("PARTDASH_ALERT_STALE_CHECK_SECONDS", default=60.0)
# `retention` (a retention job stalled) fires once the oldest partition is past its
# retention policy by this many days: a daily drop job running hours late sends nothing.
PARTDASH_RETENTION_GRACE_DAYS = env.float("PARTDASH_RETENTION_GRACE_DAYS", default=1.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}
