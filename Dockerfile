# Production image: gunicorn serving config.wsgi on port 3000, as a non-root
# user, with DEBUG off and the static files collected. The same image runs the
# Celery worker and beat (see compose.yaml). Runtime configuration comes from
# the environment: SECRET_KEY, ALLOWED_HOSTS, DATABASE_URL, REDIS_URL, ...
#
#   docker build -t commitments .
#   podman build --format docker -t commitments .
#
# With podman (or buildah), build in Docker's format: the default OCI format has
# no HEALTHCHECK, and podman drops it with a warning (docs/production.md).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: the runtime dependencies, into a virtualenv ------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
COPY requirements.lock /tmp/requirements.lock
# The runtime lock only (no dev tools), every file checked against its hash.
# Then the installer itself goes: the venv's pip and setuptools (about 23 MB
# with their bytecode) have no use at run time, and only /opt/venv is copied
# into the runtime stage.
RUN /opt/venv/bin/pip install --require-hashes -r /tmp/requirements.lock \
 && /opt/venv/bin/python -m pip uninstall --yes pip setuptools wheel \
 && /opt/venv/bin/python -m compileall -q -j 0 /opt/venv

# --- runtime --------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DEBUG=0 \
    VAR_DIR=/app/var \
    STATIC_ROOT=/app/staticfiles \
    WEB_CONCURRENCY=3

# The base image's own pip and setuptools are removed too, so that nothing can
# install packages at run time (their bytes stay in the base's layer).
RUN groupadd --system --gid 10001 app \
 && useradd --system --uid 10001 --gid app --home-dir /app --no-create-home app \
 && (python -m pip uninstall --yes --root-user-action=ignore pip setuptools wheel || true) \
 && rm -f /usr/local/bin/pip /usr/local/bin/pip3*

WORKDIR /app
COPY --from=build /opt/venv /opt/venv
COPY manage.py ./
COPY config ./config
COPY lib ./lib
COPY ratelimits ./ratelimits
COPY accounts ./accounts
COPY audit ./audit
COPY commitments ./commitments
COPY integrations ./integrations
COPY notifications ./notifications
COPY relay ./relay
COPY gather ./gather
COPY webhooks ./webhooks
COPY trackers ./trackers
COPY templates ./templates
COPY static ./static
# The receiver documentation, served at /settings/webhooks/docs.md.
COPY docs/webhooks.md ./docs/webhooks.md
COPY scripts/start ./scripts/start
# An operator's request to the service from inside the container (no curl here).
COPY scripts/request ./scripts/request

# Static files are collected (hashed and compressed) at build time. The key
# exists only for this one command: production settings refuse to load
# without one, and the real one is given at run time, never baked in.
# The project's bytecode is compiled here too: the app user cannot write
# __pycache__ at run time, so without it every start would compile again.
RUN SECRET_KEY=build-only-collectstatic-key-never-used-at-runtime \
    python manage.py collectstatic --noinput \
 && python -m compileall -q -j 0 /app \
 && mkdir -p /app/var \
 && chown -R app:app /app/var

USER app
EXPOSE 3000

# /healthz answers while the process serves (no database: that is /readyz),
# on the port gunicorn binds (PORT, default 3000; config/gunicorn.py). Loopback
# hosts are always allowed and served on plain HTTP, so the check needs no TLS.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '3000'), timeout=4)"]

# The deployment checks first (`manage.py check --deploy --fail-level ERROR`:
# an unsafe production setting stops the start with a message naming what to
# set), then gunicorn on port 3000.
CMD ["scripts/start"]
