"""Response headers and what production serves: a Content-Security-Policy on every page,
X-Forwarded-Proto trusted only behind a configured proxy, no source maps."""

from pathlib import Path

from django.test import Client

from tests.operations.test_settings import REAL_SECRET_KEY, run

ROOT = Path(__file__).resolve().parents[2]
SHOW_PROXY_HEADER = (
    "import django; django.setup(); from django.conf import settings; "
    "print(settings.SECURE_PROXY_SSL_HEADER)"
)
KEYS = "cGFydGRhc2gtdGVzdC1rZXktMzItYnl0ZXMtbG9uZyE="  # a valid Fernet key, not the dev one


def test_pages_forbid_anything_from_elsewhere_and_inline_scripts(viewer):
    client = Client()
    client.force_login(viewer)
    for path in ("/", "/alerts/", "/login/", "/api/v1/servers/", "/admin/login/"):
        policy = client.get(path)["Content-Security-Policy"]
        directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
        assert directives["default-src"] == "'self'", path
        assert directives["script-src"] == "'self'", path
        assert directives["frame-ancestors"] == "'none'", path
        # partdash's own pages set no style attribute; the admin and DRF's pages do.
        assert ("unsafe-inline" in policy) == path.startswith(("/api/", "/admin/")), path


def test_swagger_ui_runs_no_inline_script(viewer):
    client = Client()
    client.force_login(viewer)
    page = client.get("/api/docs/")
    assert page.status_code == 200
    assert "script-src 'self';" in page["Content-Security-Policy"]
    assert b"<script>" not in page.content  # its start-up script is a file of its own


def test_x_forwarded_proto_is_ignored_without_a_trusted_proxy(tmp_path):
    plain = run(tmp_path, "-c", SHOW_PROXY_HEADER, DEBUG="1", PARTDASH_HTTPS="1")
    assert plain.stdout.strip() == "None", plain.stderr


def test_x_forwarded_proto_is_trusted_behind_a_configured_proxy(tmp_path):
    proxied = run(
        tmp_path,
        "-c",
        SHOW_PROXY_HEADER,
        SECRET_KEY=REAL_SECRET_KEY,
        PARTDASH_ENCRYPTION_KEYS=KEYS,
        PARTDASH_TRUSTED_PROXY="1",
    )
    assert proxied.stdout.strip() == "('HTTP_X_FORWARDED_PROTO', 'https')", proxied.stderr


def test_production_serves_bundles_but_not_their_source_maps(tmp_path, settings):
    from partdash.static_serving import StaticWithoutSourceMaps

    (tmp_path / "js").mkdir()
    (tmp_path / "js" / "fleet.js").write_text("export {};")
    (tmp_path / "js" / "fleet.js.map").write_text("{}")
    settings.DEBUG = False
    settings.STATIC_ROOT = tmp_path
    served = StaticWithoutSourceMaps(lambda request: None).files
    assert "/static/js/fleet.js" in served
    assert "/static/js/fleet.js.map" not in served


def test_the_production_build_writes_no_source_maps():
    build = (ROOT / "frontend" / "build.mjs").read_text()
    assert 'process.env.PARTDASH_SOURCEMAPS === "1" ? "linked" : false' in build
    bundles = list((ROOT / "frontend" / "dist" / "js").glob("*.js"))
    if bundles and not list((ROOT / "frontend" / "dist" / "js").glob("*.map")):
        assert all(b"sourceMappingURL" not in bundle.read_bytes() for bundle in bundles)


def test_the_api_schema_needs_a_login(viewer):
    assert Client().get("/api/schema/").status_code in (401, 403)
    client = Client()
    client.force_login(viewer)
    assert client.get("/api/schema/").status_code == 200
