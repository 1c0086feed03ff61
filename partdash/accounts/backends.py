"""django-axes in front of the model backend, for logins that come with a request."""

from axes.backends import AxesStandaloneBackend


class LockoutBackend(AxesStandaloneBackend):
    """Every web login (/login/, /admin/login/) passes its request, and is counted and
    locked out by axes. `authenticate()` without a request (a shell, the test client's
    `login()`) cannot be attributed to an address: it is left to the model backend."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)
