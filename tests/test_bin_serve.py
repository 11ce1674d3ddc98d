"""``bin/serve`` points ``SITE_URL`` at the port it serves (``PORT``), unless ``SITE_URL`` is set.

Regression: with ``PORT=8017`` the links in printed e-mails and in the runbook export still said
``http://127.0.0.1:8000``. The real script runs here, in a copy of ``bin/`` beside a stand-in virtualenv whose
``python`` records each ``manage.py`` command with the ``SITE_URL`` it was given (so nothing is migrated,
installed or served).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HASH = "0" * 64

STAND_IN = f"""#!/usr/bin/env bash
# The stand-in interpreter: the version check passes, the pyproject hash matches the stamp, and every
# `manage.py` command is written to commands.log with the SITE_URL and PORT it saw.
here="$(cd "$(dirname "$0")/../.." && pwd)"
if [ "$1" = "-c" ]; then
    case "$2" in *hashlib*) echo "{HASH}" ;; esac
    exit 0
fi
if [ "$1" = "manage.py" ]; then
    shift
    echo "$* | SITE_URL=${{SITE_URL-unset}}" >>"$here/commands.log"
    case "$*" in
        "help --commands") echo "load_content" ;;
        create_demo_accounts) printf 'Demo logins:\\n  demo / demo-candidate-2026\\n' ;;
    esac
    exit 0
fi
echo "unexpected: $*" >&2
exit 3
"""


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
    return tmp_path


def serve(checkout: Path, **env) -> tuple[str, list[str]]:
    """Run ``bin/serve`` with ``env`` on top of a clean environment: its output and the commands it ran."""
    base = {key: value for key, value in os.environ.items() if key not in ("PORT", "SITE_URL")}
    done = subprocess.run([str(checkout / "bin" / "serve")], env={**base, **env}, capture_output=True, text=True,
                          timeout=60, check=True)
    return done.stdout, (checkout / "commands.log").read_text().splitlines()


def test_site_url_follows_port(checkout):
    out, commands = serve(checkout, PORT="8017")
    assert commands == [f"{command} | SITE_URL=http://127.0.0.1:8017" for command in (
        "migrate --noinput", "help --commands", "load_content", "create_demo_accounts",
        "collectstatic --noinput --verbosity 0", "runserver 127.0.0.1:8017")]
    assert "Serving LLM Serving Prep on http://127.0.0.1:8017/" in out


def test_default_port_and_an_explicit_site_url(checkout):
    _, commands = serve(checkout)
    assert commands[-1] == "runserver 127.0.0.1:8000 | SITE_URL=http://127.0.0.1:8000"
    (checkout / "commands.log").unlink()
    _, commands = serve(checkout, PORT="8017", SITE_URL="https://prep.example.com")
    assert commands[-1] == "runserver 127.0.0.1:8017 | SITE_URL=https://prep.example.com"
    assert {line.split(" | ")[1] for line in commands} == {"SITE_URL=https://prep.example.com"}
