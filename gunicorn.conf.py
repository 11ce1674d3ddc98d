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

Before each fork the master moves every object it holds into the collector's permanent generation
(:func:`pre_fork`), so a worker's full garbage collections no longer walk the preloaded application.

The access log and the error log both go to stdout/stderr, for the process
supervisor (systemd, a container runtime) to collect.
"""

import gc
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


def pre_fork(server, worker):
    """The master's hook just before gunicorn forks ``worker``: freeze what the master holds.

    With the application preloaded the master holds Django, the URLconf, sympy and the engine's formulas:
    some 136,000 objects that live as long as the process, and Python's full (generation 2) collection walks
    all of them. Measured in one process on ``bench/bench_http.py``'s seed (100 coach dashboard
    requests after the app was warm), a full collection took about 135 ms and came every 50 requests or so;
    after ``gc.freeze()``, which moves every object then alive to the permanent generation that collections
    skip, it took 5 ms. Frozen objects are also never written by the collector, so the forked workers keep
    sharing their pages. Objects the workers create later are collected as before.
    """
    gc.freeze()
