"""Start and stop gunicorn with the repository's configuration, for the benchmarks in this folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def start_gunicorn(env: dict[str, str], log) -> subprocess.Popen:
    """gunicorn (``gunicorn.conf.py``, ``config.wsgi``) with ``env``, output to the binary file ``log``,
    in its own process group so that :func:`stop` reaches its workers too."""
    return subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", str(ROOT / "gunicorn.conf.py"), "config.wsgi"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    """Stop gunicorn (SIGTERM to its group, SIGKILL after 30 s)."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
