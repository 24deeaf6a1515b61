import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _fresh_rate_limits(db):
    # allauth counts sign-in and reset attempts in the cache; tests start clean.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def mailbox(settings):
    from django.core import mail

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []
    return mail.outbox
