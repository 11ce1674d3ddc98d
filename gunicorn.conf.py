"""gunicorn settings for the web process: ``gunicorn -c gunicorn.conf.py config.wsgi``.

Every value comes from the environment, with defaults fit for one modest server:

- ``PORT`` (default 8000): binds ``0.0.0.0:$PORT``; ``GUNICORN_BIND`` wins when set
  (e.g. ``unix:/run/prep/gunicorn.sock`` or ``127.0.0.1:8000`` behind a local proxy);
- ``WEB_CONCURRENCY`` (default 2 x CPU cores + 1): the number of sync worker processes;
- ``GUNICORN_TIMEOUT`` (default 30 s): a worker silent for this long is killed and replaced;
- ``GUNICORN_GRACEFUL_TIMEOUT`` (default 30 s): how long workers get to finish on restart/stop;
- ``GUNICORN_KEEPALIVE`` (default 5 s): keep-alive behind a load balancer;
- ``GUNICORN_MAX_REQUESTS`` (default 1000, 0 turns it off, with 10 % jitter): recycle workers;
- ``GUNICORN_PRELOAD`` (default true): load the application -- Django, the formula engine and sympy,
  the URLconf and every view -- once in the master before forking, so a new or recycled worker answers
  its first request at once instead of importing for seconds (``bench/bench_cold_start.py``); false
  loads it in each worker (needed only to reload code with ``kill -HUP`` instead of a restart);
- ``LOG_LEVEL`` (default info): the same variable as Django's log level.

The access log and the error log both go to stdout/stderr, for the process
supervisor (systemd, a container runtime) to collect.
"""

import multiprocessing
import os


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be an integer, not {raw!r}.") from None


wsgi_app = "config.wsgi:application"
bind = [os.environ.get("GUNICORN_BIND") or f"0.0.0.0:{_int('PORT', 8000)}"]  # nosec B104 - a server must listen beyond loopback; GUNICORN_BIND narrows it
workers = _int("WEB_CONCURRENCY", multiprocessing.cpu_count() * 2 + 1)
worker_class = "sync"
timeout = _int("GUNICORN_TIMEOUT", 30)
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT", 30)
keepalive = _int("GUNICORN_KEEPALIVE", 5)
max_requests = _int("GUNICORN_MAX_REQUESTS", 1000)
max_requests_jitter = max_requests // 10
preload_app = os.environ.get("GUNICORN_PRELOAD", "true").strip().lower() not in ("0", "false", "no", "off")

accesslog = "-"  # stdout
errorlog = "-"  # stderr
loglevel = os.environ.get("LOG_LEVEL", "info").lower()
# Client address, request line, status, size, time in microseconds; no cookies nor query secrets beyond the URL.
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(D)sus "%(a)s"'

# Behind a TLS-terminating proxy, trust its X-Forwarded-* headers only from these addresses.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
