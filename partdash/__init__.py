"""partdash: partition health of MySQL and MariaDB fleets."""

from partdash.celery import app as celery_app

__all__ = ["celery_app"]
