"""Django's staticfiles app, with source maps left out of `collectstatic`: production
serves what was collected (whitenoise, from STATIC_ROOT), so a map built for development
(PARTDASH_SOURCEMAPS=1) is never served by it."""

from django.contrib.staticfiles.apps import StaticFilesConfig


class StaticFilesWithoutMaps(StaticFilesConfig):
    ignore_patterns = [*StaticFilesConfig.ignore_patterns, "*.map"]
