"""WSGI entry point (gunicorn partdash.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "partdash.settings")
application = get_wsgi_application()
