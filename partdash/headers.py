"""Response headers the Django settings have no name for: Content-Security-Policy."""

from django.conf import settings

# Pages partdash does not write, whose HTML carries style attributes: Swagger UI
# (/api/docs/), DRF's browsable API (/api/v1/ in a browser) and the Django admin. They get
# 'unsafe-inline' styles; scripts stay 'self' only everywhere.
RELAXED_STYLE_PATHS = ("/api/", "/admin/")


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
