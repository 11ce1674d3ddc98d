"""The embedded default as ``./bin/serve`` runs it: ``DEBUG`` unset (off), hashed static files from
``collectstatic`` served by whitenoise, and the site's own 404 page (never Django's debug page).

The settings are loaded in a subprocess, outside pytest (so the production static storage applies), on a
fresh SQLite file and a fresh ``STATIC_ROOT``; requests go through the full middleware stack with Django's
test client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.paths import REPO_ROOT

BASE_DIR = REPO_ROOT

PROBE = """
import json, re
import django
django.setup()
from django.conf import settings
from django.test import Client
client = Client()
home = client.get("/")
css = re.search(r'href="(/static/css/app\\.[0-9a-f]+\\.css)"', home.content.decode()).group(1)
stylesheet = client.get(css)
missing = client.get("/no-such-page/")
print(json.dumps({
    "debug": settings.DEBUG,
    "storage": settings.STORAGES["staticfiles"]["BACKEND"],
    "home": home.status_code,
    "css": css,
    "css_status": stylesheet.status_code,
    "css_type": stylesheet["Content-Type"],
    "css_cache": stylesheet.get("Cache-Control", ""),
    "missing": missing.status_code,
    "missing_body": missing.content.decode(),
}))
"""


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=BASE_DIR, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def test_debug_off_serves_hashed_static_files_and_our_404_page(tmp_path):
    env = {key: value for key, value in os.environ.items()
           if key not in ("DEBUG", "DATABASE_URL", "STATIC_ROOT", "SITE_URL", "ALLOWED_HOSTS")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", STATIC_ROOT=str(tmp_path / "static"),
               DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    collected = run(["manage.py", "collectstatic", "--noinput", "--verbosity", "0"], env)
    assert collected.returncode == 0, collected.stderr

    probe = run(["-c", PROBE], env)
    assert probe.returncode == 0, probe.stderr
    seen = json.loads(probe.stdout.strip().splitlines()[-1])

    assert seen["debug"] is False
    assert seen["storage"] == "whitenoise.storage.CompressedManifestStaticFilesStorage"
    assert seen["home"] == 200
    assert (seen["css_status"], seen["css_type"]) == (200, 'text/css; charset="utf-8"')
    assert "immutable" in seen["css_cache"]  # a hashed name: cached for good
    assert seen["missing"] == 404
    assert "Page not found" in seen["missing_body"] and 'href="/"' in seen["missing_body"]
    assert "Using the URLconf" not in seen["missing_body"]  # Django's debug 404 lists every URL
