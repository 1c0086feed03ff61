"""Response headers the Django settings have no name for: Content-Security-Policy."""

from django.conf import settings

# Swagger UI (drf-spectacular's split view) loads its code and styles from this origin
# but sets a few inline styles from HTML; only that page gets 'unsafe-inline' styles.
RELAXED_STYLE_PATHS = ("/api/docs/",)


class ContentSecurityPolicyMiddleware:
    """Sets CONTENT_SECURITY_POLICY on every response that has none: the pages load
    nothing from elsewhere and run no inline script."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        policy = settings.CONTENT_SECURITY_POLICY
        if policy and "Content-Security-Policy" not in response:
            if request.path.startswith(RELAXED_STYLE_PATHS):
                policy = policy.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")
            response["Content-Security-Policy"] = policy
        return response
