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
    if [ -z "$python" ] || ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
        echo "Python 3.11 is needed (set PYTHON=/path/to/python3.11)." >&2
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
