"""Static files as whitenoise serves them in production, less the source maps."""

from whitenoise.middleware import WhiteNoiseMiddleware


class StaticWithoutSourceMaps(WhiteNoiseMiddleware):
    """What `collectstatic` gathered, except `*.map`: the minified bundles are served,
    their sources are not (a map left in var/static/ by a development build answers 404)."""

    def add_file_to_dictionary(self, url, path, stat_cache=None) -> None:
        if not url.endswith(".map"):
            super().add_file_to_dictionary(url, path, stat_cache=stat_cache)
