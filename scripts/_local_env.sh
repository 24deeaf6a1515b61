# Sourced by scripts/serve and scripts/manage: the quick start's environment
# (local_env) and its run once installed (serve_local; tests/config/
# test_quick_start.py runs it as it is).
# It runs as production does (DEBUG off: the product's own 404 and 500 pages,
# hashed static files served by WhiteNoise), on this machine only (SITE_URL
# and ALLOWED_HOSTS loopback, which config/checks.py recognises: printed mail,
# the folder broker and loopback webhooks are fine there), with keys of its
# own made once and kept in var/ (never the public development ones).
# Anything already set in the environment wins.

local_env() {
    var_dir="${VAR_DIR:-var}"
    case "$var_dir" in /*) ;; *) var_dir="$PWD/$var_dir" ;; esac
    mkdir -p "$var_dir"
    if [ ! -s "$var_dir/secret_key" ]; then
        (umask 077 && .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(50))' \
            > "$var_dir/secret_key")
    fi
    if [ ! -s "$var_dir/field_encryption_keys" ]; then
        # A database made by an earlier quick start (DEBUG on) holds secrets
        # under the public development key: it stays, to decrypt only, after
        # the new key, which encrypts (`manage.py reencrypt_secrets` moves them).
        (umask 077 && .venv/bin/python - "$var_dir/db.sqlite3" > "$var_dir/field_encryption_keys" <<'PY'
import base64, os, sys
from config.environment import DEV_FIELD_ENCRYPTION_KEY
keys = [base64.urlsafe_b64encode(os.urandom(32)).decode()]
if os.path.exists(sys.argv[1]):
    keys.append(DEV_FIELD_ENCRYPTION_KEY)
print(",".join(keys))
PY
        )
    fi
    export DEBUG="${DEBUG:-0}"
    SECRET_KEY="${SECRET_KEY:-$(cat "$var_dir/secret_key")}"
    FIELD_ENCRYPTION_KEYS="${FIELD_ENCRYPTION_KEYS:-$(cat "$var_dir/field_encryption_keys")}"
    export SECRET_KEY FIELD_ENCRYPTION_KEYS
    export SITE_URL="${SITE_URL:-http://localhost:${PORT:-3000}}"
    # Collected (hashed, compressed) as the image does, into var/.
    export STATIC_ROOT="${STATIC_ROOT:-$var_dir/static}"
    # Plain lines, so the e-mails in var/worker.log read as mail.
    export LOG_JSON="${LOG_JSON:-0}"
    # Try a webhook or Slack receiver running on this machine.
    export OUTBOUND_ALLOW_LOOPBACK="${OUTBOUND_ALLOW_LOOPBACK:-1}"
}

serve_local() {
    local_env
    .venv/bin/python manage.py migrate --noinput
    .venv/bin/python manage.py collectstatic --noinput --verbosity 0

    echo "Starting the background worker (log: $var_dir/worker.log)"
    .venv/bin/python manage.py run_worker --concurrency=1 > "$var_dir/worker.log" 2>&1 &
    worker=$!
    trap 'kill "$worker" 2>/dev/null; wait "$worker" 2>/dev/null' EXIT INT TERM

    echo
    echo "Commitments is starting on http://localhost:${PORT:-3000}"
    echo "Sign up at http://localhost:${PORT:-3000}/accounts/signup/ or create a user:"
    echo "  ./scripts/manage create_user you@example.com --password '...' --superuser"
    echo
    .venv/bin/gunicorn config.wsgi:application --config python:config.gunicorn \
        --bind "${HOST:-127.0.0.1}:${PORT:-3000}" --workers "${WEB_CONCURRENCY:-2}"
}
