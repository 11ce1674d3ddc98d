"""Cold start: ``manage.py check``, Django's import bill, and a freshly started gunicorn's first responses.

Usage (from the repository root; needs nothing running, it uses a throw-away SQLite database)::

    python bench/bench_cold_start.py            # 3 runs of each measurement
    python bench/bench_cold_start.py --runs 5

It prints:

1. the wall time of ``python manage.py check`` (each run, then the median);
2. ``python -X importtime`` of ``django.setup()``: the total, and the packages that cost the most,
   sympy among them (the formula engine imports it when the apps load);
3. for gunicorn with the repository's ``gunicorn.conf.py`` (2 workers, production settings on plain HTTP):
   the time from starting the process to the first 200 from a page, that first request's latency and the
   next one's -- the first request must not pay for imports the worker could have done at boot;
   measured side by side with the application preloaded in the master (``GUNICORN_PRELOAD``, the default)
   and loaded by each worker;
4. how many times sympy was imported across the gunicorn master and its workers after serving requests to
   every kind of page, read from ``PYTHONPROFILEIMPORTTIME`` (one line per real import): exactly once when
   preloaded (in the master, inherited by the forked workers), exactly once per worker otherwise -- never
   per request.

Exit status 1 when sympy is imported any other number of times or a page does not answer 200.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gunicorn_process import start_gunicorn, stop  # this folder: run as `python bench/…`

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["/calculators/ladder/", "/runbook/", "/drills/", "/bank/", "/api/v1/calc/ladder/", "/accounts/login/"]
IMPORT_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)\s*$")


def production_env(tmp: Path, port: int, workers: int) -> dict[str, str]:
    """Production settings on plain HTTP over loopback, a SQLite file in ``tmp``, no Redis, no broker."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CACHE_URL", "REDIS_URL",
                                                            "CELERY_BROKER_URL", "PYTHONPROFILEIMPORTTIME")}
    env.update({
        "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1", "DATABASE_URL": f"sqlite:///{tmp / 'cold.sqlite3'}",
        "SECURE_SSL_REDIRECT": "false", "SESSION_COOKIE_SECURE": "false", "CSRF_COOKIE_SECURE": "false",
        "SECURE_HSTS_SECONDS": "0", "STATIC_ROOT": str(tmp / "static"), "LOG_LEVEL": "WARNING",
        "WEB_CONCURRENCY": str(workers), "GUNICORN_BIND": f"127.0.0.1:{port}", "GUNICORN_MAX_REQUESTS": "0",
        "PYTHONPATH": str(ROOT),
    })
    return env


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    """Run ``cmd``; return (wall seconds, the completed process). Raise if it fails."""
    began = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-500:]}")
    return elapsed, done


def import_costs(stderr: str) -> tuple[dict[str, int], int]:
    """From ``-X importtime`` output: top-level package -> cumulative import microseconds, and sympy's own
    cumulative microseconds wherever it was first imported (0 when it was not)."""
    costs: dict[str, int] = {}
    sympy = 0
    for line in stderr.splitlines():
        match = IMPORT_LINE.match(line)
        if not match:
            continue
        if len(match.group(3)) == 1:  # one space of indent: a top-level import
            package = match.group(4).split(".")[0]
            costs[package] = costs.get(package, 0) + int(match.group(2))
        if match.group(4) == "sympy":
            sympy = int(match.group(2))
    return costs, sympy


def get(port: int, path: str) -> tuple[int, float]:
    """GET ``path`` on a fresh connection; return (status, seconds)."""
    began = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path, headers={"Host": "127.0.0.1"})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, time.perf_counter() - began


def first_responses(env: dict[str, str], port: int, tmp: Path) -> tuple[float, float, float]:
    """Start gunicorn; return (seconds to the first 200 of a page, that request's latency, the next one's)."""
    with open(tmp / "gunicorn.log", "wb") as log:
        began = time.perf_counter()
        process = start_gunicorn(env, log)
        try:
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"gunicorn exited {process.returncode}: {(tmp / 'gunicorn.log').read_text()}")
                if time.perf_counter() - began > 120:
                    raise RuntimeError("gunicorn did not answer within 120 s")
                try:
                    status, first = get(port, "/calculators/ladder/")
                except OSError:
                    time.sleep(0.02)
                    continue
                if status != 200:
                    log.flush()
                    raise RuntimeError(f"/calculators/ladder/ answered {status}: "
                                       f"{(tmp / 'gunicorn.log').read_text(errors='replace')[-2000:]}")
                ready = time.perf_counter() - began
                _, second = get(port, "/calculators/ladder/")
                return ready, first, second
        finally:
            stop(process)


def sympy_imports(env: dict[str, str], port: int, tmp: Path, workers: int) -> tuple[int, float, list[str]]:
    """Serve every page a few times under ``PYTHONPROFILEIMPORTTIME``; count the real imports of sympy.

    Returns (number of sympy imports across all gunicorn processes, sympy's cumulative import ms in one,
    the pages that did not answer 200).
    """
    log_path = tmp / "importtime.log"
    with open(log_path, "wb") as log:
        process = start_gunicorn({**env, "PYTHONPROFILEIMPORTTIME": "1"}, log)
        failures = []
        try:
            deadline = time.perf_counter() + 120
            while True:
                try:
                    get(port, "/healthz")
                    break
                except OSError:
                    if time.perf_counter() > deadline or process.poll() is not None:
                        raise RuntimeError("gunicorn did not start") from None
                    time.sleep(0.05)
            for _ in range(5 * workers):  # enough requests that every worker serves every page
                for path in PAGES:
                    status, _ = get(port, path)
                    if status != 200:
                        failures.append(f"{path} -> {status}")
        finally:
            stop(process)
    lines = [IMPORT_LINE.match(line) for line in log_path.read_text(errors="replace").splitlines()]
    sympy = [m for m in lines if m and m.group(4) == "sympy"]
    cost = max((int(m.group(2)) for m in sympy), default=0) / 1000
    return len(sympy), cost, sorted(set(failures))


def main(argv: list[str] | None = None) -> int:
    """Run the measurements, print them, and return 1 when sympy is not imported exactly once per worker."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    status = 0
    with tempfile.TemporaryDirectory(prefix="bench_cold_") as name:
        tmp = Path(name)
        env = production_env(tmp, free_port(), args.workers)
        timed([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], env)
        timed([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], env)

        checks = [timed([sys.executable, "manage.py", "check"], env)[0] for _ in range(args.runs)]
        print(f"manage.py check: {', '.join(f'{s:.2f}' for s in checks)} s; median {statistics.median(checks):.2f} s")

        setups, costs = [], {}
        for _ in range(args.runs):
            elapsed, done = timed([sys.executable, "-X", "importtime", "-c", "import django; django.setup()"], env)
            setups.append(elapsed)
            costs, sympy = import_costs(done.stderr)
        total = sum(costs.values())
        top = sorted(costs.items(), key=lambda kv: -kv[1])[:8]
        print(f"django.setup() in a fresh interpreter: median {statistics.median(setups):.2f} s wall; "
              f"imports {total / 1000:.0f} ms, of which " + ", ".join(f"{k} {v / 1000:.0f} ms" for k, v in top))
        print(f"sympy imported by django.setup(): {'yes' if sympy else 'no'} ({sympy / 1000:.0f} ms, "
              f"{sympy / max(total, 1):.0%} of the import time)")

        # Side by side, alternating: the application preloaded in the master (the default) and loaded by
        # each worker after the fork (GUNICORN_PRELOAD=false).
        rows: dict[str, list] = {"true": [], "false": []}
        for _ in range(args.runs):
            for preload in rows:
                env = {**env, "GUNICORN_PRELOAD": preload, "GUNICORN_BIND": f"127.0.0.1:{(port := free_port())}"}
                rows[preload].append(first_responses(env, port, tmp))
        for preload, label in (("true", "preloaded"), ("false", "loaded per worker")):
            for what, index in (("start to first 200 of /calculators/ladder/", 0), ("that first request", 1),
                                ("the second request", 2)):
                values = [row[index] * 1000 for row in rows[preload]]
                print(f"gunicorn ({args.workers} workers, {label}), {what}: "
                      f"{', '.join(f'{v:.0f}' for v in values)} ms; median {statistics.median(values):.0f} ms")

        for preload, expected, meaning in (("true", 1, "once, in the master, before forking"),
                                           ("false", args.workers, "once per worker")):
            env = {**env, "GUNICORN_PRELOAD": preload, "GUNICORN_BIND": f"127.0.0.1:{(port := free_port())}"}
            count, cost, failures = sympy_imports(env, port, tmp, args.workers)
            print(f"GUNICORN_PRELOAD={preload}: sympy imports across gunicorn's master and {args.workers} workers "
                  f"after {5 * args.workers * len(PAGES)} requests: {count} (expected {expected}: {meaning}); "
                  f"{cost:.0f} ms under -X importtime")
            if count != expected:
                print(f"FAIL: sympy was imported {count} times, not {expected}")
                status = 1
            if failures:
                print(f"FAIL: pages did not answer 200: {', '.join(failures)}")
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
