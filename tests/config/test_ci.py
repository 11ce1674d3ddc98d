"""CI neither fails for a busy package manager nor passes over a test it could not run (issue 28 item 9).

- ``.ci/packages.sh``'s ``apt_get`` (which ``.ci/run`` installs chromium and npm with) waits while another
  install holds the package manager's lock, instead of failing at once: run here with a stand-in ``apt-get``
  that answers "Could not get lock" twice and then installs.
- A test that lacks a tool, a package, a port or a server (:mod:`tests.needs`) is skipped on a developer's
  machine and fails under ``CI=true``; no test skips for those reasons any other way.
- The SQLite halves of ``tests/config/test_concurrency.py`` and ``tests/config/test_settings.py`` run in CI's SQLite
  stage.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests import needs
from tests.paths import REPO_ROOT

ROOT = REPO_ROOT
LOCKED = "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)"

STAND_IN = """#!/usr/bin/env bash
# apt-get: records its arguments; fails with $FAIL_WITH for the first $FAILURES calls, then succeeds.
echo "$*" >>"$CALLS"
count=$(wc -l <"$CALLS")
if [ "$count" -le "$FAILURES" ]; then
    echo "$FAIL_WITH" >&2
    exit 100
fi
echo "Setting up the package ..."
"""


def apt_get(tmp_path: Path, failures: int, fail_with: str = LOCKED, **env: str) -> tuple[subprocess.CompletedProcess,
                                                                                         list[str]]:
    """Run ``apt_get install -y chromium`` from .ci/packages.sh with the stand-in first on PATH (and a ``sudo``
    that just runs its command); the result and the stand-in's calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("apt-get", STAND_IN), ("sudo", '#!/usr/bin/env bash\nexec "$@"\n')):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    calls = tmp_path / "calls.log"
    calls.write_text("")
    done = subprocess.run(
        ["bash", "-c", 'set -euo pipefail; source .ci/packages.sh; apt_get install -y chromium'], cwd=ROOT,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(calls),
             "FAILURES": str(failures), "FAIL_WITH": fail_with, "APT_RETRY_S": "0", **env},
        capture_output=True, text=True, timeout=60)
    return done, calls.read_text().splitlines()


def test_apt_get_waits_while_another_install_holds_the_lock(tmp_path):
    done, calls = apt_get(tmp_path, failures=2)

    assert done.returncode == 0, done.stdout + done.stderr
    assert calls == ["-o DPkg::Lock::Timeout=600 install -y chromium"] * 3  # apt-get waits for dpkg's lock too
    assert done.stdout.count("Another install holds the package manager's lock") == 2
    assert "Setting up the package" in done.stdout


def test_apt_get_fails_at_once_for_anything_but_a_lock(tmp_path):
    done, calls = apt_get(tmp_path, failures=5, fail_with="E: Unable to locate package chromium")

    assert done.returncode == 1 and len(calls) == 1


def test_apt_get_gives_up_once_the_wait_is_over(tmp_path):
    done, calls = apt_get(tmp_path, failures=5, APT_LOCK_WAIT_S="0")

    assert done.returncode == 1 and len(calls) == 1
    assert "still locked by another install after 0 s" in done.stderr


def test_a_missing_tool_skips_here_and_fails_under_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no-such-tool-28 is not installed"):
        needs.tool("no-such-tool-28")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"no-such-tool-28 is not installed \(CI=true: .ci/run must"):
        needs.tool("no-such-tool-28")
    with pytest.raises(pytest.fail.Exception, match="the Python package no_such_package_28 is not installed"):
        needs.module("no_such_package_28")
    assert needs.tool("bash").endswith("/bash")  # present: its path, under CI or not


# Skips for what the machine lacks, written without tests/needs.py (so they would skip silently in CI).
BYPASSES = re.compile(r"importorskip\(|skipif\([^)]*which\(|pytest\.skip\([^)]*(not installed|is missing|"
                      r"not answering|listens on|free port)")


def test_every_skip_for_a_missing_tool_goes_through_needs():
    found = [f"{path.relative_to(ROOT)}:{number}" for path in sorted((ROOT / "tests").rglob("*.py"))
             if path.name not in ("needs.py", "test_ci.py")
             for number, line in enumerate(path.read_text().splitlines(), start=1) if BYPASSES.search(line)]

    assert found == []


def test_the_sqlite_stage_runs_the_sqlite_halves():
    smoke = (ROOT / ".ci" / "run").read_text().split("smoke_tests() {")[1].split("\n}\n")[0]

    assert "tests/config/test_concurrency.py" in smoke and "tests/config/test_settings.py" in smoke
    assert "env -u DATABASE_URL ./bin/test" in smoke  # on SQLite
