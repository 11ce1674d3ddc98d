"""``bin/serve`` points ``SITE_URL`` at the port it serves (``PORT``), unless ``SITE_URL`` is set, and says
"Serving" only once that port accepts connections.

Regression: with ``PORT=8017`` the links in printed e-mails and in the runbook export still said
``http://127.0.0.1:8000``. The real script runs here, in a copy of ``bin/`` beside a stand-in virtualenv whose
``python`` records each ``manage.py`` command with the ``SITE_URL`` it was given (so nothing is migrated,
installed or served); its ``runserver`` waits a moment, says so, listens, and ends after one connection.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT

ROOT = REPO_ROOT
HASH = "0" * 64

STAND_IN = f"""#!/usr/bin/env bash
# The stand-in interpreter: the version check passes, the pyproject hash matches the stamp, and every
# `manage.py` command is written to commands.log with the SITE_URL and PORT it saw.
here="$(cd "$(dirname "$0")/../.." && pwd)"
if [ "$1" = "-c" ]; then
    case "$2" in *hashlib*) echo "{HASH}" ;; esac
    exit 0
fi
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
    echo "$*" >>"$here/pip.log"
    exit 0
fi
if [ "$1" = "manage.py" ]; then
    shift
    echo "$* | SITE_URL=${{SITE_URL-unset}}" >>"$here/commands.log"
    case "$*" in
        "help --commands") echo "load_content" ;;
        create_demo_accounts)
            echo "EMAIL_BACKEND=${{EMAIL_BACKEND-unset}} LOG_LEVEL=${{LOG_LEVEL-unset}}" >"$here/demo.env"
            printf 'Subject: an e-mail\\nDemo logins:\\n  demo / demo-candidate-2026\\n' ;;
        runserver*) exec {sys.executable} "$here/listen.py" "${{3##*:}}" ;;
    esac
    exit 0
fi
echo "unexpected: $*" >&2
exit 3
"""


LISTEN = """
import socket, sys, time
time.sleep(1)  # the real server spends a while starting: bin/serve must not say "Serving" meanwhile
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(sys.argv[1])))
print("server: listening", flush=True)
server.listen()
server.accept()[0].close()
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A directory with ``bin/serve`` and ``bin/_venv.sh`` as they are, and the stand-in ``.venv``."""
    (tmp_path / "bin").mkdir()
    for name in ("serve", "_venv.sh"):
        shutil.copy2(ROOT / "bin" / name, tmp_path / "bin" / name)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'stand-in'\n")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(STAND_IN)
    python.chmod(0o755)
    (tmp_path / ".venv" / ".pyproject.sha256").write_text(HASH + "\n")
    (tmp_path / "listen.py").write_text(LISTEN)
    return tmp_path


def serve(checkout: Path, **env) -> tuple[str, list[str]]:
    """Run ``bin/serve`` with ``env`` on top of a clean environment: its output and the commands it ran."""
    base = {key: value for key, value in os.environ.items() if key not in ("PORT", "SITE_URL")}
    done = subprocess.run([str(checkout / "bin" / "serve")], env={**base, **env}, capture_output=True, text=True,
                          timeout=60, check=True)
    return done.stdout, (checkout / "commands.log").read_text().splitlines()


def test_site_url_follows_port(checkout):
    port = free_port()
    out, commands = serve(checkout, PORT=str(port))
    assert commands == [f"{command} | SITE_URL=http://127.0.0.1:{port}" for command in (
        "migrate --noinput", "help --commands", "load_content", "create_demo_accounts",
        "collectstatic --noinput --verbosity 0", f"runserver --noreload 127.0.0.1:{port}")]
    assert f"Serving LLM Serving Prep on http://127.0.0.1:{port}/" in out


def test_serving_is_said_once_the_port_listens_and_the_logins_follow_without_the_mail(checkout):
    out, _ = serve(checkout, PORT=str(free_port()))
    assert out.index("server: listening") < out.index("Serving LLM Serving Prep")
    assert "Subject: an e-mail" not in out  # what comes before the logins (e-mails, setup lines) is not shown
    assert out.count("demo / demo-candidate-2026") == 1
    assert out.index("Serving LLM Serving Prep") < out.index("Demo logins:")


def test_the_demo_assignments_notices_are_kept_in_memory_not_printed(checkout):
    serve(checkout, PORT=str(free_port()))
    assert (checkout / "demo.env").read_text().split() == [
        "EMAIL_BACKEND=django.core.mail.backends.locmem.EmailBackend", "LOG_LEVEL=WARNING"]


def test_a_port_in_use_is_refused_before_anything_runs(checkout):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        base = {key: value for key, value in os.environ.items() if key not in ("PORT", "SITE_URL")}
        done = subprocess.run([str(checkout / "bin" / "serve")], env={**base, "PORT": str(port)},
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"Port {port} is already in use" in done.stderr
    assert not (checkout / "commands.log").exists()


def test_default_port_and_an_explicit_site_url(checkout):
    with socket.socket() as probe:
        busy = probe.connect_ex(("127.0.0.1", 8000)) == 0
    if busy:  # something serves 8000 on this machine (another checkout's bin/serve): the refusal names the default
        base = {key: value for key, value in os.environ.items() if key not in ("PORT", "SITE_URL")}
        done = subprocess.run([str(checkout / "bin" / "serve")], env=base, capture_output=True, text=True, timeout=60)
        assert done.returncode == 1 and "Port 8000 is already in use" in done.stderr
    else:
        _, commands = serve(checkout)
        assert commands[-1] == "runserver --noreload 127.0.0.1:8000 | SITE_URL=http://127.0.0.1:8000"
        (checkout / "commands.log").unlink()
    port = free_port()
    _, commands = serve(checkout, PORT=str(port), SITE_URL="https://prep.example.com")
    assert commands[-1] == f"runserver --noreload 127.0.0.1:{port} | SITE_URL=https://prep.example.com"
    assert {line.split(" | ")[1] for line in commands} == {"SITE_URL=https://prep.example.com"}


def test_a_first_run_says_what_it_does_first_and_keeps_pip_quiet(checkout):
    # No stamp: the packages were never installed. The first line said is what the long wait is; pip runs with
    # -qq (warnings such as an ignored find-links location stay quiet, its errors still print) and then the stamp
    # is written, so the next run installs nothing and says nothing of it.
    (checkout / ".venv" / ".pyproject.sha256").unlink()
    out, _ = serve(checkout, PORT=str(free_port()))
    assert out.splitlines()[0] == "First run: installing packages into .venv, a few minutes…"
    installs = (checkout / "pip.log").read_text().splitlines()
    assert installs == ["-m pip install -qq --disable-pip-version-check --upgrade pip",
                        '-m pip install -qq --disable-pip-version-check -e .[dev]']
    assert (checkout / ".venv" / ".pyproject.sha256").read_text().strip() == HASH
    again, _ = serve(checkout, PORT=str(free_port()))
    assert "installing" not in again and (checkout / "pip.log").read_text().splitlines() == installs
