# Shared by bin/serve and bin/test (sourced, not run): make sure .venv exists and
# holds the project installed with `pip install -e ".[dev]"`, then put it first
# on PATH. pip runs only when pyproject.toml changed since the last install: the
# hash of the installed pyproject.toml is kept in .venv/.pyproject.sha256.

PROJECT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV_DIR="$PROJECT_ROOT/.venv"
VENV_STAMP="$VENV_DIR/.pyproject.sha256"
cd "$PROJECT_ROOT"

_find_python() {
    # The first interpreter on PATH that is Python 3.11 or newer ($PYTHON wins).
    local candidate
    for candidate in ${PYTHON:-} python3.13 python3.12 python3.11 python3 python; do
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    echo "Python 3.11 or newer is needed; none found on PATH (set PYTHON=/path/to/python3.11)." >&2
    return 1
}

if [ ! -f "$VENV_STAMP" ]; then
    # The one line said before the long silent part (pip's own chatter is kept quiet below, its errors are not).
    echo "First run: installing packages into .venv, a few minutes…"
fi

if ! "$VENV_DIR/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    _base_python="$(_find_python)"
    rm -rf "$VENV_DIR"
    if ! "$_base_python" -m venv "$VENV_DIR"; then
        echo "Could not create the virtualenv (on Debian/Ubuntu: apt-get install python3-venv)." >&2
        exit 1
    fi
fi

_pyproject_hash="$("$VENV_DIR/bin/python" -c 'import hashlib; print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest())')"
if [ "$(cat "$VENV_STAMP" 2>/dev/null || true)" != "$_pyproject_hash" ]; then
    if [ -f "$VENV_STAMP" ]; then
        echo "pyproject.toml changed: updating the packages in .venv, a minute or two…"
    fi
    # -qq: pip's progress and warnings stay quiet; its errors still print (and stop the script, set -e callers).
    "$VENV_DIR/bin/python" -m pip install -qq --disable-pip-version-check --upgrade pip
    "$VENV_DIR/bin/python" -m pip install -qq --disable-pip-version-check -e ".[dev]"
    echo "$_pyproject_hash" >"$VENV_STAMP"
fi

export PATH="$VENV_DIR/bin:$PATH"
export VIRTUAL_ENV="$VENV_DIR"
unset _base_python _pyproject_hash
