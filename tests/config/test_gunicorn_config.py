"""gunicorn.conf.py: gunicorn accepts it, and its values follow the environment."""

import multiprocessing
import os
import runpy
import subprocess
import sys
from pathlib import Path

from tests.paths import REPO_ROOT

BASE_DIR = REPO_ROOT
CONF = BASE_DIR / "gunicorn.conf.py"
GUNICORN = Path(sys.executable).with_name("gunicorn")


def load(monkeypatch, **env):
    for name in ("PORT", "GUNICORN_BIND", "WEB_CONCURRENCY", "GUNICORN_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(CONF))


def test_gunicorn_checks_the_config_and_the_app():
    env = {k: v for k, v in os.environ.items() if k not in ("WEB_CONCURRENCY", "PORT", "GUNICORN_BIND")}
    result = subprocess.run(  # nosec B603 - fixed argument list, no shell
        [str(GUNICORN), "--check-config", "-c", "gunicorn.conf.py", "config.wsgi"],
        cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=120)

    assert result.returncode == 0, result.stdout + result.stderr


def test_the_defaults(monkeypatch):
    conf = load(monkeypatch)

    assert conf["bind"] == ["0.0.0.0:8000"]
    assert conf["workers"] == multiprocessing.cpu_count() * 2 + 1
    assert conf["accesslog"] == "-"
    assert conf["timeout"] == 30 and conf["graceful_timeout"] == 30


def test_port_and_web_concurrency_come_from_the_environment(monkeypatch):
    conf = load(monkeypatch, PORT="9123", WEB_CONCURRENCY="4", GUNICORN_TIMEOUT="60")

    assert conf["bind"] == ["0.0.0.0:9123"]
    assert conf["workers"] == 4
    assert conf["timeout"] == 60


def test_the_application_is_preloaded_unless_turned_off(monkeypatch):
    monkeypatch.delenv("GUNICORN_PRELOAD", raising=False)
    assert load(monkeypatch)["preload_app"] is True
    assert load(monkeypatch, GUNICORN_PRELOAD="false")["preload_app"] is False
    assert load(monkeypatch, GUNICORN_PRELOAD="1")["preload_app"] is True
