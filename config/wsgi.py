import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_wsgi_application()

# Production settings that are unsafe stop the server here, with the message
# `manage.py check --deploy` gives (config/checks.py).
from config.checks import refuse_unsafe_start  # noqa: E402

refuse_unsafe_start()
