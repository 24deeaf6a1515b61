import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_wsgi_application()

# Production settings that are unsafe stop the server here, with the message
# `manage.py check --deploy` gives (config/checks.py).
from config.checks import refuse_unsafe_start  # noqa: E402

refuse_unsafe_start()

# Load the application before serving: Django imports the URLconf, and with it
# every view module (the language-model SDKs among them), on the first request
# a process serves; each gunicorn worker loads this module before it accepts
# a connection, so that cost is paid here instead of by a user's request,
# also after a worker restart or `max_requests` recycling.
from django.urls import get_resolver  # noqa: E402

_resolver = get_resolver()
_resolver.url_patterns  # noqa: B018 (imports the URLconf and the views it names)
_resolver.reverse_dict  # noqa: B018 (the reverse lookup tables the first reverse() builds)
