# Sourced by scripts/serve and scripts/test: make .venv and install a lock file
# into it, again only when the lock file changed since the last install.
set -euo pipefail

ensure_venv() {
    local lock="$1"
    local python="${PYTHON:-}"
    if [ -z "$python" ]; then
        for candidate in python3.11 python3; do
            if command -v "$candidate" >/dev/null 2>&1; then python="$candidate"; break; fi
        done
    fi
    # 3.11.3 or later: below it, redis needs async-timeout, which the locks
    # (made on a later 3.11) do not hold, so the hash-checked install fails.
    if [ -z "$python" ] || ! "$python" -c 'import sys; sys.exit(not (3, 11, 3) <= sys.version_info[:3] < (3, 12))'; then
        echo "Python 3.11 (3.11.3 or later) is needed (set PYTHON=/path/to/python3.11)." >&2
        exit 1
    fi
    if [ ! -x .venv/bin/python ]; then
        "$python" -m venv .venv
    fi
    local stamp=".venv/.installed-$(basename "$lock")"
    local want
    want=$(sha256sum "$lock" | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        echo "Installing dependencies from $lock ..."
        .venv/bin/python -m pip install --quiet --disable-pip-version-check \
            --require-hashes -r "$lock"
        echo "$want" > "$stamp"
    fi
}

# The Python client and MCP server of clients/python, installed editable into
# the dev venv (scripts/test), so a regenerated client is the one the tests
# import: its dependencies are in requirements-dev.lock (--no-deps), and the
# venv's own setuptools and the lock's wheel build it (no download). Again
# only when its pyproject.toml changed or it is missing.
ensure_client() {
    local stamp=".venv/.installed-client"
    local want
    want=$(sha256sum clients/python/pyproject.toml | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] \
        || ! .venv/bin/python -c 'import commitments_client, commitments_mcp' 2>/dev/null; then
        echo "Installing clients/python (editable) ..."
        .venv/bin/python -m pip install --quiet --disable-pip-version-check \
            --no-deps --no-build-isolation --editable clients/python
        echo "$want" > "$stamp"
    fi
}
