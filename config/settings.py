"""Django settings, read from environment variables.

The defaults are the embedded mode, safe to expose to a browser: SQLite (WAL,
writers wait their turn), Celery tasks run eagerly, local-memory cache, console
e-mail, ``DEBUG`` off (the site's own 404/500 pages), a ``SECRET_KEY`` generated
once and kept in ``var/secret_key``. ``DEBUG=true`` is for development. The
HTTPS hardening settings default to on exactly when ``SITE_URL`` is https (each
can still be overridden by its own variable), so a production host with an
https ``SITE_URL`` passes ``check --deploy``. README.md lists every variable and
its default.
"""

import os
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from celery.schedules import crontab
from django.contrib.messages import constants as message_constants
from django.core.exceptions import ImproperlyConfigured

from config.env import cache_from_url, envbool, envint, envlist, envstr, kept_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent


# Under pytest or `manage.py test` static files are served without a manifest,
# so tests never need `collectstatic`.
TESTING = "pytest" in sys.modules or sys.argv[1:2] == ["test"]

# --- Core -------------------------------------------------------------------

DEBUG = envbool("DEBUG", False)

SECRET_KEY = envstr("SECRET_KEY") or kept_secret_key(BASE_DIR / "var" / "secret_key")

# The site's address: links in e-mail sent outside a request (the review digest, assignment notices), the
# demo invitation, the runbook export. An https address turns the HTTPS hardening below on by default. Unset, it
# is the local address on PORT (8000 unless set), the port ./bin/serve and runserver are told to serve.
SITE_URL = envstr("SITE_URL", f"http://127.0.0.1:{envstr('PORT') or '8000'}").rstrip("/")
SITE_IS_HTTPS = urlsplit(SITE_URL).scheme.lower() == "https"

# /_floor/, the static page bench/bench_http.py measures every other page against; a 404 unless true.
BENCH_FLOOR = envbool("BENCH_FLOOR", False)

# Spaced repetition (drills/reviews/scheduling.py): no review is scheduled further out than this many days
# (FSRS's own ceiling is 100 years), and a candidate's review day turns at this local hour, not at midnight
# (a review at 01:00 counts for the evening before, for "due today" and streaks). Anki's defaults differ
# (36,500 days; 04:00): a year keeps an interview's material in sight.
REVIEW_MAXIMUM_INTERVAL_DAYS = envint("REVIEW_MAXIMUM_INTERVAL_DAYS", 365)
if REVIEW_MAXIMUM_INTERVAL_DAYS < 2:
    raise ImproperlyConfigured("REVIEW_MAXIMUM_INTERVAL_DAYS must be at least 2 (Hard stays a day under Good).")
REVIEW_DAY_STARTS_HOUR = envint("REVIEW_DAY_STARTS_HOUR", 4)
if not 0 <= REVIEW_DAY_STARTS_HOUR <= 23:
    raise ImproperlyConfigured("REVIEW_DAY_STARTS_HOUR must be an hour from 0 to 23.")

# Seconds between two refreshes of an open coach dashboard's tables (htmx polling, paused while the tab is hidden).
COACH_DASHBOARD_POLL_S = envint("COACH_DASHBOARD_POLL_S", 20)

# Unset: the local names and SITE_URL's host, so a fresh `./bin/serve` behind any SITE_URL answers.
_LOCAL_HOSTS = dict.fromkeys(["localhost", "127.0.0.1", "testserver", urlsplit(SITE_URL).hostname or ""])
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ",".join(_LOCAL_HOSTS))
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    # Partials loader configured explicitly in TEMPLATES below.
    "template_partials.apps.SimpleAppConfig",
    "crispy_forms",
    "crispy_bootstrap5",
    "django_celery_beat",
    "axes",
    "core",
    "accounts",
    "calculators",
    "drills",
    "runbook",
    "coaching",
    "outbox",
    "home",
    "llm_grading",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy and Permissions-Policy on every response (the settings of the same names).
    "config.middleware.SecurityHeadersMiddleware",
    # A read-only or full database: the "cannot save right now" page (503), never a traceback.
    "config.middleware.DatabaseUnwritableMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    # NUL in form data and query strings becomes U+FFFD (PostgreSQL refuses NUL in text): config/middleware.py.
    "config.middleware.NulMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "accounts.timezones.UserTimezoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A form's address opened with GET: the site's 405 page, not a blank one (config/middleware.py).
    "config.middleware.MethodNotAllowedPageMiddleware",
    # Whole pages for htmx history restores; Vary: HX-Request on every response (config/htmx_history.py).
    "config.htmx_history.HtmxHistoryMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A log-in that interrupts an htmx request or a form post leads back to the page (config/login_redirect.py).
    "config.login_redirect.LoginRedirectMiddleware",
    # django-axes: last, so it sees the login view's response and answers a lockout.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Templates: django-template-partials wraps the (cached) filesystem and app
# loaders, so "page.html#fragment" names a {% partialdef fragment %} inside
# page.html. The partials tags are builtins: no {% load partials %} needed.
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "core.navigation.navigation",
            ],
            "loaders": [
                (
                    "template_partials.loader.Loader",
                    [
                        (
                            "django.template.loaders.cached.Loader",
                            [
                                "django.template.loaders.filesystem.Loader",
                                "django.template.loaders.app_directories.Loader",
                            ],
                        )
                    ],
                )
            ],
            "builtins": ["template_partials.templatetags.partials"],
        },
    }
]

# --- Database ---------------------------------------------------------------

_DEFAULT_SQLITE = BASE_DIR / "var" / "db.sqlite3"
_DATABASE_URL = envstr("DATABASE_URL")
if not _DATABASE_URL:
    _DEFAULT_SQLITE.parent.mkdir(parents=True, exist_ok=True)
    _DATABASE_URL = f"sqlite:///{_DEFAULT_SQLITE}"

DATABASES = {
    "default": dj_database_url.parse(
        _DATABASE_URL,
        conn_max_age=envint("DATABASE_CONN_MAX_AGE", 0),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Two tabs rating one card, twenty candidates submitting at once: with WAL readers never wait for the
    # writer; IMMEDIATE takes the write lock when a transaction begins (a deferred one that later writes
    # fails at once with "database is locked" instead of waiting); a writer waits up to SQLITE_TIMEOUT_S
    # for its turn. synchronous=NORMAL is safe under WAL (a power cut may lose the last commits, never
    # corrupt the file). Sources: sqlite.org/wal.html, sqlite.org/lang_transaction.html, Django 5.2's
    # "SQLite notes" (init_command, transaction_mode).
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": envint("SQLITE_TIMEOUT_S", 20),
        **DATABASES["default"].get("OPTIONS", {}),
    }
    # Tests run on a file (WAL does not apply to an in-memory database, whose threads also share one
    # connection), one per test process, so the concurrency tests race real connections.
    DATABASES["default"]["TEST"] = {
        "NAME": str(Path(tempfile.gettempdir()) / f"prep-test-{os.getpid()}.sqlite3"),
    }
else:
    # The test database is named per test run (the test process's id): two runs against one server
    # (two developers, CI beside a developer) never create, flush or drop each other's database.
    DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{os.getpid()}"[:63]}

# --- Cache ------------------------------------------------------------------

CACHES = {"default": cache_from_url(envstr("CACHE_URL") or envstr("REDIS_URL") or "locmem://")}

# --- Serving simulator --------------------------------------------------------
# Engine steps one web request (the /simulator/ page's rate, an API call) may simulate: about
# ten simulated minutes of the reference stack at 20 req/s is 50,000 (calculators/simulation.py).
SIMULATOR_WEB_MAX_STEPS = envint("SIMULATOR_WEB_MAX_STEPS", 400_000)
# A visitor who is not logged in gets a quarter of that (about a second of a worker on this machine).
SIMULATOR_ANON_MAX_STEPS = envint("SIMULATOR_ANON_MAX_STEPS", 100_000)
# Calls that simulate (a call answered from the cache costs nothing and is not counted), per window of
# SIMULATOR_LIMIT_WINDOW_S seconds: per address for anonymous callers, per account when logged in. Over
# it the API answers 429 with Retry-After. Counted in the cache above (Redis in production).
SIMULATOR_ANON_CALLS = envint("SIMULATOR_ANON_CALLS", 6)
SIMULATOR_USER_CALLS = envint("SIMULATOR_USER_CALLS", 30)
SIMULATOR_LIMIT_WINDOW_S = envint("SIMULATOR_LIMIT_WINDOW_S", 60)

# --- Celery -----------------------------------------------------------------
# No broker configured: tasks run eagerly, in-process, and raise their errors.
# With one, tasks are queued through the outbox (outbox.services.enqueue): a
# broker outage leaves them in the database until the drain publishes them.

CELERY_BROKER_URL = envstr("CELERY_BROKER_URL")
if CELERY_BROKER_URL:
    CELERY_TASK_ALWAYS_EAGER = False
    CELERY_RESULT_BACKEND = envstr("CELERY_RESULT_BACKEND", CELERY_BROKER_URL)
    # Redis transport: give up on an unreachable or silent (frozen) broker within 0.3-0.5 s per try (a publish that
    # retries makes up to three such waits), so an enqueue never holds a request much longer than a second; the
    # outbox row stays pending for the drain (tests/outbox/test_redis_outage.py freezes a redis-server with SIGSTOP).
    # visibility_timeout: a message taken by a worker that died unacknowledged is handed out again after an hour.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 0.5, "socket_timeout": 0.3,
                                       "visibility_timeout": 3600}
    # CELERY_KEY_PREFIX puts every broker and result key under one prefix (kombu's global_keyprefix), so a
    # Redis shared with others (a CI run, a second site) can be cleaned of this one's keys by that prefix.
    _CELERY_KEY_PREFIX = envstr("CELERY_KEY_PREFIX")
    if _CELERY_KEY_PREFIX:
        CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = _CELERY_KEY_PREFIX
        CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"global_keyprefix": _CELERY_KEY_PREFIX}
else:
    CELERY_BROKER_URL = "memory://"
    CELERY_TASK_ALWAYS_EAGER = True
    CELERY_TASK_EAGER_PROPAGATES = True
    CELERY_RESULT_BACKEND = envstr("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ACKS_LATE = True
# Tasks are found in each app's tasks.py, and in these modules, whose tasks sit beside the service they run.
CELERY_IMPORTS = ["calculators.simulation"]
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_TIMEOUT = 0.5
# Publishing retries once, at once: a request never waits long on a broker that is down, the outbox keeps the task.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0, "interval_max": 0}
# A row published this many seconds ago whose task never acknowledged it (Redis lost the message) is published
# again by the outbox drain (outbox.services.drain); the tasks are idempotent, so a slow worker costs nothing.
OUTBOX_REPUBLISH_AFTER_S = envint("OUTBOX_REPUBLISH_AFTER_S", 900)
CELERY_TIMEZONE = "UTC"
# `celery -A config beat` keeps its schedule in the database (django-celery-beat);
# the entries below are written there when beat starts. The review job runs
# hourly so that each candidate's night and morning are their own (drills.tasks).
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BEAT_SCHEDULE = {
    "reviews-nightly": {"task": "drills.tasks.nightly_reviews", "schedule": crontab(minute=7)},
    # Closes the timed rounds past their deadline (grading, FSRS): GET pages only read (drills.tasks).
    "rounds-close-due": {"task": "drills.tasks.close_due_rounds", "schedule": 60.0, "options": {"expire_seconds": 50}},
    "coaching-due-reminders": {"task": "coaching.tasks.send_due_reminders", "schedule": crontab(hour=8, minute=17)},
    # Publishes the tasks that could not be queued (broker down) once it is back: outbox.services.drain.
    # A run not started within 50 s is dropped (django-celery-beat's expire_seconds): no pile-up behind an outage.
    "outbox-drain": {"task": "outbox.tasks.drain_outbox", "schedule": 60.0, "options": {"expire_seconds": 50}},
}

# --- Open answers graded by the user's own model (llm_grading; README "Grading by your own model") -------
# Users' API keys are Fernet-encrypted with this secret (comma-separated to rotate); unset: kept in var/.
LLM_KEY_ENCRYPTION_KEY = envstr("LLM_KEY_ENCRYPTION_KEY") or kept_secret_key(BASE_DIR / "var" / "llm_key_secret")
# Private/loopback endpoints (a local vLLM, SGLang, Ollama) and http:// to them: on unless SITE_URL is https.
LLM_ENDPOINT_ALLOW_PRIVATE = envbool("LLM_ENDPOINT_ALLOW_PRIVATE", not SITE_IS_HTTPS)
# One call, all in (s): in-process without a broker, so under gunicorn's 30 s; a worker may wait longer.
LLM_GRADING_TIMEOUT_S = envint("LLM_GRADING_TIMEOUT_S", 25 if CELERY_TASK_ALWAYS_EAGER else 120)
LLM_GRADING_MAX_REPLY_BYTES = envint("LLM_GRADING_MAX_REPLY_BYTES", 256 * 1024)

# --- Auth -------------------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes checks (and records) every login attempt first; Django's own
# backend then does the actual authentication.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    # Beside axes's per-(username, address) lockout: an address with many failures over any usernames is slowed
    # down (a wait of seconds between tries), never locked: a company's NAT keeps logging in.
    "accounts.address_limit.AddressLimitBackend",
    # ModelBackend, with the session's user read together with its coach flag (one query, not two).
    "accounts.backends.CoachFlagBackend",
    # Only for sessions logged in before CoachFlagBackend existed: it never checks a password (see there).
    "django.contrib.auth.backends.ModelBackend",
]
# Login rate limiting: after AXES_FAILURE_LIMIT failed attempts for one username
# from one IP address, that pair is refused (HTTP 429, the lockout page) until
# AXES_COOLOFF_MINUTES have passed; a successful login resets the count.
AXES_FAILURE_LIMIT = envint("AXES_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=envint("AXES_COOLOFF_MINUTES", 15))
# Failures from one address, over all usernames, within the cool-off, from which the address is slowed down
# (accounts.address_limit): each try must come 1 s after its last failure, doubling every AXES_ADDRESS_SLOW_STEP
# failures up to AXES_ADDRESS_MAX_WAIT_S. One password tried on many accounts is held to one try per wait, and
# nobody else behind the address is locked out.
AXES_ADDRESS_SLOW_AFTER = envint("AXES_ADDRESS_SLOW_AFTER", 20)
AXES_ADDRESS_SLOW_STEP = envint("AXES_ADDRESS_SLOW_STEP", 10)
AXES_ADDRESS_MAX_WAIT_S = envint("AXES_ADDRESS_MAX_WAIT_S", 30)
# Lock one username at one address, never an address as a whole.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# A refused try is not a failure: it neither extends a lock nor adds to the address's count.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# 429 with Retry-After, and the page says which limit it was (accounts.address_limit.lockout_response).
AXES_LOCKOUT_CALLABLE = "accounts.address_limit.lockout_response"
# The attempted username, cut to the 255 characters axes stores (a longer one was a 500 on PostgreSQL).
AXES_USERNAME_CALLABLE = "accounts.axes.attempted_username"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False  # no start-up banner on stdout (it would land in `manage.py calc` output)
# The client's address, as django-axes reads it through django-ipware: by default
# REMOTE_ADDR only, so nobody picks their address with a forged X-Forwarded-For.
# Behind a reverse proxy REMOTE_ADDR is the proxy's (every client would share it and
# the lockout would amount to per-username): there, and only there, set
# AXES_IPWARE_META_PRECEDENCE_ORDER=HTTP_X_FORWARDED_FOR,REMOTE_ADDR and
# AXES_IPWARE_PROXY_COUNT to the number of proxy addresses the header carries after
# the client's (0 behind one proxy that overwrites the header with the client's
# address); a header of any other length is not trusted (REMOTE_ADDR is used).
AXES_IPWARE_META_PRECEDENCE_ORDER = tuple(envlist("AXES_IPWARE_META_PRECEDENCE_ORDER", "REMOTE_ADDR"))
AXES_IPWARE_PROXY_COUNT = envint("AXES_IPWARE_PROXY_COUNT", -1)
if AXES_IPWARE_PROXY_COUNT < 0:
    AXES_IPWARE_PROXY_COUNT = None  # unset: no expectation about the header's length
LOGIN_URL = "login"
# A stale CSRF token on an htmx request reloads the page, keeping what was typed (config/login_redirect.py).
CSRF_FAILURE_VIEW = "config.login_redirect.csrf_failure"
LOGIN_REDIRECT_URL = "/"

# --- E-mail -----------------------------------------------------------------

EMAIL_BACKEND = envstr("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = envstr("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", 25)
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = envstr("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", "LLM Serving Prep <noreply@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

# --- Internationalisation -----------------------------------------------------

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Static files -------------------------------------------------------------

STATIC_URL = "static/"
STATIC_ROOT = Path(envstr("STATIC_ROOT") or BASE_DIR / "staticfiles")  # where collectstatic writes
STATICFILES_DIRS = [BASE_DIR / "static"]
_STATIC_BACKEND = (
    "django.contrib.staticfiles.storage.StaticFilesStorage"
    if DEBUG or TESTING
    else "whitenoise.storage.CompressedManifestStaticFilesStorage"
)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": _STATIC_BACKEND},
}

# --- Forms and messages -------------------------------------------------------

CRISPY_ALLOWED_TEMPLATE_PACKS = "bootstrap5"
CRISPY_TEMPLATE_PACK = "bootstrap5"
MESSAGE_TAGS = {message_constants.ERROR: "danger"}

# --- Security (hardened by default whenever SITE_URL is https) -----------------
# The embedded default serves plain HTTP on 127.0.0.1 with DEBUG off: redirecting it to HTTPS or marking
# its cookies secure would lock its user out. A production host names its https address in SITE_URL.

SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", SITE_IS_HTTPS)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers probe over plain HTTP
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31_536_000 if SITE_IS_HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", SITE_IS_HTTPS)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", SITE_IS_HTTPS)
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", SITE_IS_HTTPS)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", SITE_IS_HTTPS)
X_FRAME_OPTIONS = "DENY"

# Content-Security-Policy of every page (config.middleware.SecurityHeadersMiddleware): everything from the
# site itself; no inline script, no style attribute, no eval, no plugin, no framing; images also as data:
# URIs (Bootstrap's icons). Coach Markdown cannot show another site's image (runbook.content) and the
# browser would refuse one anyway. Browser tests (tests/e2e/test_csp.py) fail on any violation report.
CONTENT_SECURITY_POLICY = envstr("CONTENT_SECURITY_POLICY", "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
]))
# Browser features no page uses, turned off for every page and anything embedded in it.
PERMISSIONS_POLICY = envstr("PERMISSIONS_POLICY", ", ".join(
    f"{feature}=()" for feature in ("accelerometer", "camera", "geolocation", "gyroscope", "magnetometer",
                                    "microphone", "payment", "usb")))

# "HTTP_X_FORWARDED_PROTO=https" when a trusted proxy terminates TLS.
_PROXY_SSL_HEADER = envstr("SECURE_PROXY_SSL_HEADER")
if _PROXY_SSL_HEADER:
    _header, _sep, _value = _PROXY_SSL_HEADER.partition("=")
    if not _sep or not _header.strip() or not _value.strip():
        raise ImproperlyConfigured(
            "SECURE_PROXY_SSL_HEADER must look like HTTP_X_FORWARDED_PROTO=https, "
            f"not {_PROXY_SSL_HEADER!r}."
        )
    SECURE_PROXY_SSL_HEADER = (_header.strip(), _value.strip())

# --- Logging ------------------------------------------------------------------

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    # A refused request (403, 404) is one line; a server error keeps its traceback (config/log_filters.py).
    "filters": {"refusal_without_traceback": {"()": "config.log_filters.RefusalWithoutTraceback"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    # Django's own records go to the root handler only (no duplicate lines, also in production).
    "loggers": {"django": {"handlers": [], "level": envstr("LOG_LEVEL", "INFO"), "propagate": True},
                "django.request": {"handlers": [], "filters": ["refusal_without_traceback"], "propagate": True}},
}
