from django import template
from django.conf import settings

register = template.Library()

CONSOLE_BACKEND = "django.core.mail.backends.console.EmailBackend"


@register.simple_tag
def mail_goes_to_console() -> bool:
    """True when e-mail is printed by the process that sends it (the quick start)."""
    return settings.EMAIL_BACKEND == CONSOLE_BACKEND
