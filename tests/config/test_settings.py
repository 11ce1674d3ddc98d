"""Settings read from the environment, the deployment checklist, and Celery wiring."""

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.celery_worker import new_queue, real_worker, require_redis
from tests.paths import REPO_ROOT

BASE_DIR = REPO_ROOT
SETTINGS_FILE = BASE_DIR / "config" / "settings.py"

# Every variable config/settings.py reads; cleared so each test states its own.
SETTINGS_VARIABLES = [
    "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "DATABASE_URL",
    "DATABASE_CONN_MAX_AGE", "CACHE_URL", "REDIS_URL", "CELERY_BROKER_URL",
    "CELERY_RESULT_BACKEND", "EMAIL_BACKEND", "EMAIL_HOST", "EMAIL_PORT", "EMAIL_HOST_USER",
    "EMAIL_HOST_PASSWORD", "EMAIL_USE_TLS", "DEFAULT_FROM_EMAIL", "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD",
    "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_PROXY_SSL_HEADER", "LOG_LEVEL", "SITE_URL",
    "SQLITE_TIMEOUT_S", "REVIEW_MAXIMUM_INTERVAL_DAYS", "REVIEW_DAY_STARTS_HOUR", "PORT",
]

PRODUCTION_SECRET_KEY = "k3P$9vQ2!xR7@mW4#tY8^zL1&bN6*cV5(fG0)hJ-uI_oE+aS=dF" + "x" * 10


def clean_environment(**env):
    """The current environment minus every settings variable, plus ``env``."""
    result = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
    result.update(env)
    return result


def load_settings(monkeypatch, **env):
    """Execute config/settings.py afresh under ``env`` and return its names."""
    for name in SETTINGS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(SETTINGS_FILE))


def check_deploy(**env):
    """Run ``manage.py check --deploy --fail-level WARNING`` under ``env``."""
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=BASE_DIR,
        env=clean_environment(DJANGO_SETTINGS_MODULE="config.settings", **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


class TestDeploymentChecklist:
    def test_explicit_production_values_pass_check_deploy_with_no_issues(self):
        result = check_deploy(
            DEBUG="false",
            SECRET_KEY=PRODUCTION_SECRET_KEY,
            ALLOWED_HOSTS="prep.example.com",
            SECURE_SSL_REDIRECT="true",
            SECURE_HSTS_SECONDS="31536000",
            SECURE_HSTS_INCLUDE_SUBDOMAINS="true",
            SECURE_HSTS_PRELOAD="true",
            SESSION_COOKIE_SECURE="true",
            CSRF_COOKIE_SECURE="true",
            SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO=https",
        )

        assert result.returncode == 0, result.stdout + result.stderr
        assert "System check identified no issues (0 silenced)." in result.stdout
        assert "WARNING" not in result.stderr

    def test_an_https_site_url_alone_hardens_every_security_default(self):
        # DEBUG and SECRET_KEY unset: DEBUG is off and the key generated in var/ is a real one (W009 quiet).
        result = check_deploy(SITE_URL="https://prep.example.com", ALLOWED_HOSTS="prep.example.com")

        assert result.returncode == 0, result.stdout + result.stderr
        assert "System check identified no issues (0 silenced)." in result.stdout

    def test_the_checklist_still_catches_a_weakened_setting(self):
        result = check_deploy(
            DEBUG="false",
            SECRET_KEY=PRODUCTION_SECRET_KEY,
            ALLOWED_HOSTS="prep.example.com",
            SITE_URL="https://prep.example.com",
            SECURE_HSTS_SECONDS="0",
        )

        assert result.returncode != 0
        assert "security.W004" in result.stderr

    def test_without_a_secret_key_the_one_kept_in_var_is_used(self, monkeypatch):
        names = load_settings(monkeypatch)

        kept = (BASE_DIR / "var" / "secret_key").read_text().strip()
        assert names["SECRET_KEY"] == kept and len(kept) == 50
        assert load_settings(monkeypatch)["SECRET_KEY"] == kept  # the same key on every start
        assert load_settings(monkeypatch, SECRET_KEY="explicit")["SECRET_KEY"] == "explicit"


class TestKeptSecretKey:
    def test_the_first_call_generates_a_private_key_and_later_calls_read_it(self, tmp_path):
        from config.settings import kept_secret_key

        path = tmp_path / "var" / "secret_key"
        first = kept_secret_key(path)

        assert len(first) == 50 and len(set(first)) >= 5 and not first.startswith("django-insecure")
        assert path.stat().st_mode & 0o777 == 0o600
        assert kept_secret_key(path) == first
        assert [p.name for p in path.parent.iterdir()] == ["secret_key"]  # no temporary file left behind

    def test_two_processes_starting_at_once_agree_on_one_key(self, tmp_path):
        path = tmp_path / "secret_key"
        script = ("from config.settings import kept_secret_key; "
                  f"print(kept_secret_key(__import__('pathlib').Path({str(path)!r})))")
        env = clean_environment(DJANGO_SETTINGS_MODULE="config.settings", SECRET_KEY="unused")
        runs = [subprocess.Popen([sys.executable, "-c", script], cwd=BASE_DIR, env=env, stdout=subprocess.PIPE,
                                 text=True) for _ in range(4)]
        keys = {run.communicate(timeout=60)[0].strip() for run in runs}

        assert keys == {path.read_text().strip()}


class TestEnvironmentParsing:
    def test_local_defaults(self, monkeypatch):
        names = load_settings(monkeypatch)

        assert names["DEBUG"] is False  # the site's own error pages, never the debug page
        assert names["SITE_URL"] == "http://127.0.0.1:8000"
        assert names["ALLOWED_HOSTS"] == ["localhost", "127.0.0.1", "testserver"]
        assert names["SECURE_SSL_REDIRECT"] is False  # plain HTTP on 127.0.0.1 keeps working
        assert names["SECURE_HSTS_SECONDS"] == 0
        assert (names["SESSION_COOKIE_SECURE"], names["CSRF_COOKIE_SECURE"]) == (False, False)
        assert names["CACHES"]["default"]["BACKEND"].endswith("LocMemCache")
        assert names["EMAIL_BACKEND"] == "django.core.mail.backends.console.EmailBackend"
        assert names["TIME_ZONE"] == "UTC"
        assert names["USE_TZ"] is True

    def test_site_url_follows_port_unless_set(self, monkeypatch):
        # Regression: `manage.py export_runbook OUT` beside a site served on PORT=8017 linked to :8000.
        assert load_settings(monkeypatch, PORT="8017")["SITE_URL"] == "http://127.0.0.1:8017"
        assert load_settings(monkeypatch, PORT="8017", SITE_URL="https://prep.example.com")["SITE_URL"] == \
            "https://prep.example.com"

    def test_an_https_site_url_turns_every_https_setting_on(self, monkeypatch):
        names = load_settings(monkeypatch, SITE_URL="https://prep.example.com/")

        assert names["SITE_URL"] == "https://prep.example.com"
        assert "prep.example.com" in names["ALLOWED_HOSTS"]
        assert names["SECURE_SSL_REDIRECT"] is True and names["SECURE_HSTS_SECONDS"] == 31_536_000
        assert names["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True and names["SECURE_HSTS_PRELOAD"] is True
        assert (names["SESSION_COOKIE_SECURE"], names["CSRF_COOKIE_SECURE"]) == (True, True)
        # Each can still be turned off by its own variable.
        assert load_settings(monkeypatch, SITE_URL="https://x.example.com", SECURE_SSL_REDIRECT="false")[
            "SECURE_SSL_REDIRECT"] is False

    def test_debug_off_over_plain_http_keeps_the_https_settings_off(self, monkeypatch):
        names = load_settings(monkeypatch, DEBUG="false", SITE_URL="http://10.0.0.5:8000")

        assert names["DEBUG"] is False and names["SECURE_SSL_REDIRECT"] is False
        assert names["SESSION_COOKIE_SECURE"] is False and "10.0.0.5" in names["ALLOWED_HOSTS"]

    def test_sqlite_waits_for_its_turn_to_write(self, monkeypatch):
        database = load_settings(monkeypatch)["DATABASES"]["default"]

        assert database["OPTIONS"] == {"init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                                       "transaction_mode": "IMMEDIATE", "timeout": 20}
        assert database["TEST"]["NAME"].endswith(f"prep-test-{os.getpid()}.sqlite3")  # a file: WAL applies
        assert load_settings(monkeypatch, SQLITE_TIMEOUT_S="5")["DATABASES"]["default"]["OPTIONS"]["timeout"] == 5
        postgres = load_settings(monkeypatch, DATABASE_URL="postgres://u:p@h:5432/n")["DATABASES"]["default"]
        assert "transaction_mode" not in postgres.get("OPTIONS", {})
        # PostgreSQL's test database is named per run, so two runs never drop each other's (issue 21, finding 8).
        assert postgres["TEST"]["NAME"] == f"test_{postgres['NAME']}_{os.getpid()}"

    def test_the_running_test_database_is_a_wal_file(self, db):
        from django.db import connection

        if connection.vendor != "sqlite":
            pytest.skip(f"WAL is SQLite's journal; this run's database is {connection.vendor}")
        assert not connection.is_in_memory_db()
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA journal_mode")
            assert cursor.fetchone()[0] == "wal"
            cursor.execute("PRAGMA busy_timeout")
            assert cursor.fetchone()[0] == 20_000

    def test_without_database_url_it_uses_sqlite_under_var(self, monkeypatch):
        database = load_settings(monkeypatch)["DATABASES"]["default"]

        assert database["ENGINE"] == "django.db.backends.sqlite3"
        assert Path(database["NAME"]) == BASE_DIR / "var" / "db.sqlite3"
        assert (BASE_DIR / "var").is_dir()

    def test_database_url_names_a_postgresql_server(self, monkeypatch):
        database = load_settings(
            monkeypatch,
            DATABASE_URL="postgres://prep:s3cret@db.example.com:5433/prep",
            DATABASE_CONN_MAX_AGE="60",
        )["DATABASES"]["default"]

        assert database["ENGINE"] == "django.db.backends.postgresql"
        assert (database["NAME"], database["USER"], database["PASSWORD"]) == (
            "prep", "prep", "s3cret",
        )
        assert (database["HOST"], database["PORT"]) == ("db.example.com", 5433)
        assert database["CONN_MAX_AGE"] == 60

    def test_allowed_hosts_is_a_comma_list(self, monkeypatch):
        names = load_settings(monkeypatch, ALLOWED_HOSTS=" a.example.com, b.example.com ,")

        assert names["ALLOWED_HOSTS"] == ["a.example.com", "b.example.com"]

    def test_a_redis_url_gives_the_redis_cache(self, monkeypatch):
        cache = load_settings(monkeypatch, REDIS_URL="redis://127.0.0.1:6379/1")["CACHES"]["default"]

        assert cache == {
            "BACKEND": "core.cache.RedisCache",  # Django's, answering "not cached" while Redis is down
            "LOCATION": "redis://127.0.0.1:6379/1",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }

    def test_cache_url_wins_over_redis_url(self, monkeypatch):
        names = load_settings(monkeypatch, REDIS_URL="redis://x:6379/1", CACHE_URL="dummy://")

        assert names["CACHES"]["default"]["BACKEND"].endswith("DummyCache")

    def test_an_unknown_cache_scheme_is_a_clear_error(self, monkeypatch):
        with pytest.raises(ImproperlyConfigured, match="CACHE_URL must start with"):
            load_settings(monkeypatch, CACHE_URL="memcached://x")

    def test_the_review_ceiling_and_day_start_are_settings_with_bounds(self, monkeypatch):
        names = load_settings(monkeypatch)
        assert (names["REVIEW_MAXIMUM_INTERVAL_DAYS"], names["REVIEW_DAY_STARTS_HOUR"]) == (365, 4)
        names = load_settings(monkeypatch, REVIEW_MAXIMUM_INTERVAL_DAYS="90", REVIEW_DAY_STARTS_HOUR="0")
        assert (names["REVIEW_MAXIMUM_INTERVAL_DAYS"], names["REVIEW_DAY_STARTS_HOUR"]) == (90, 0)
        with pytest.raises(ImproperlyConfigured, match="at least 2"):
            load_settings(monkeypatch, REVIEW_MAXIMUM_INTERVAL_DAYS="1")
        with pytest.raises(ImproperlyConfigured, match="from 0 to 23"):
            load_settings(monkeypatch, REVIEW_DAY_STARTS_HOUR="24")

    def test_a_boolean_that_is_not_one_is_a_clear_error(self, monkeypatch):
        with pytest.raises(ImproperlyConfigured, match="DEBUG must be true or false"):
            load_settings(monkeypatch, DEBUG="maybe")

    def test_the_proxy_ssl_header_is_name_equals_value(self, monkeypatch):
        names = load_settings(monkeypatch, SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO=https")

        assert names["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")
        with pytest.raises(ImproperlyConfigured, match="SECURE_PROXY_SSL_HEADER"):
            load_settings(monkeypatch, SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO")

    def test_tests_never_need_collectstatic(self, settings):
        assert settings.STORAGES["staticfiles"]["BACKEND"] == (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
        )

    def test_production_serves_compressed_hashed_static_files(self, tmp_path):
        script = "from django.conf import settings; print(settings.STORAGES['staticfiles']['BACKEND'])"
        result = subprocess.run(
            [sys.executable, "-c", script],
            cwd=BASE_DIR,
            env=clean_environment(
                DJANGO_SETTINGS_MODULE="config.settings",
                DEBUG="false",
                SECRET_KEY=PRODUCTION_SECRET_KEY,
            ),
            capture_output=True, text=True, timeout=60,
        )

        assert result.stdout.strip() == "whitenoise.storage.CompressedManifestStaticFilesStorage", (
            result.stderr
        )


class TestCelery:
    def test_without_a_broker_tasks_run_eagerly_and_propagate_errors(self, monkeypatch):
        names = load_settings(monkeypatch)

        assert names["CELERY_TASK_ALWAYS_EAGER"] is True
        assert names["CELERY_TASK_EAGER_PROPAGATES"] is True
        assert names["CELERY_BROKER_URL"] == "memory://"

    def test_with_a_broker_tasks_go_to_it_and_results_come_back_through_it(self, monkeypatch):
        names = load_settings(monkeypatch, CELERY_BROKER_URL="redis://127.0.0.1:6379/3")

        assert names["CELERY_TASK_ALWAYS_EAGER"] is False
        assert names["CELERY_RESULT_BACKEND"] == "redis://127.0.0.1:6379/3"

    def test_an_explicit_result_backend_wins(self, monkeypatch):
        names = load_settings(
            monkeypatch,
            CELERY_BROKER_URL="redis://127.0.0.1:6379/3",
            CELERY_RESULT_BACKEND="redis://127.0.0.1:6379/4",
        )

        assert names["CELERY_RESULT_BACKEND"] == "redis://127.0.0.1:6379/4"

    def test_the_app_reads_django_settings_and_runs_a_task_in_process(self):
        from config import celery_app
        from config.celery import ping

        assert celery_app.conf.task_always_eager is True
        assert ping.delay().get(timeout=5) == "pong"


@pytest.mark.integration
def test_a_real_worker_runs_a_task_sent_through_redis():
    require_redis()
    with real_worker(new_queue(), clean_environment()) as worker:
        assert worker.send_task("config.ping").get(timeout=60) == "pong"
    assert "config.ping" in worker.output
