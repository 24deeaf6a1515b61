"""The bare project's WSGI application, loaded before serving as the
service's is (config/wsgi.py), so that no measured call pays for imports."""

import os

from django.core.wsgi import get_wsgi_application

# Set, not defaulted: the benchmark's environment names the service's settings.
os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.bare.settings"

application = get_wsgi_application()

from django.urls import get_resolver  # noqa: E402

get_resolver().url_patterns  # noqa: B018 (imports the URLconf and the view)
