"""A small OpenID provider of the tests' own (django-oauth-toolkit with OIDC on), run in
its own gunicorn by `tests/accounts/provider_server.py`: people, their passwords and their
groups come from a JSON file the tests write, read again at every sign-in."""
