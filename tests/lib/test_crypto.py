"""Secrets at rest: the Fernet helper behind encrypted fields (chat URLs now,
webhook secrets and model keys later)."""

from __future__ import annotations

import functools
import io

import pytest
from cryptography.fernet import Fernet

from lib.crypto import DecryptionError, decrypt_str, encrypt_str, reencrypt


@functools.cache
def key(name: str) -> str:
    """A Fernet key of its own for each name a test uses."""
    return Fernet.generate_key().decode()


def test_a_secret_round_trips_and_is_not_readable_at_rest(settings):
    settings.FIELD_ENCRYPTION_KEYS = [key("key one")]
    token = encrypt_str("https://hooks.slack.com/services/T/B/secret")
    assert "secret" not in token and "slack" not in token
    assert decrypt_str(token) == "https://hooks.slack.com/services/T/B/secret"


def test_the_same_secret_encrypts_differently_each_time(settings):
    settings.FIELD_ENCRYPTION_KEYS = [key("key one")]
    assert encrypt_str("same") != encrypt_str("same")


def test_a_key_is_rotated_by_prepending_a_new_one(settings):
    settings.FIELD_ENCRYPTION_KEYS = [key("old key")]
    old_token = encrypt_str("secret")
    settings.FIELD_ENCRYPTION_KEYS = [key("new key"), key("old key")]
    assert decrypt_str(old_token) == "secret"
    new_token = reencrypt(old_token)
    settings.FIELD_ENCRYPTION_KEYS = [key("new key")]
    assert decrypt_str(new_token) == "secret"
    with pytest.raises(DecryptionError):
        decrypt_str(old_token)


def test_a_value_no_key_can_read_is_an_error_not_garbage(settings):
    settings.FIELD_ENCRYPTION_KEYS = [key("one")]
    token = encrypt_str("secret")
    settings.FIELD_ENCRYPTION_KEYS = [key("another")]
    with pytest.raises(DecryptionError):
        decrypt_str(token)


# --- rotating keys: manage.py reencrypt_secrets --------------------------------------


def _raw_urls() -> list[str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT chat_url FROM notifications_nudgechannel ORDER BY id")
        return [row[0] for row in cursor.fetchall()]


def _slack_for(user, settings, url):
    from notifications.models import ChannelKind
    from notifications.services import notification_channel_set

    settings.OUTBOUND_ALLOW_LOOPBACK = True
    return notification_channel_set(user=user, kind=ChannelKind.SLACK, chat_url=url)


@pytest.mark.django_db
def test_reencrypt_secrets_moves_every_secret_to_the_newest_key(
    settings, assigner, assignee, outsider
):
    from django.core.management import call_command

    from notifications.models import ChannelKind, NudgeChannel

    settings.FIELD_ENCRYPTION_KEYS = [key("old key")]
    _slack_for(assigner, settings, "https://hooks.slack.com/services/T/B/one")
    _slack_for(assignee, settings, "https://hooks.slack.com/services/T/B/two")
    NudgeChannel.objects.create(user=outsider, kind=ChannelKind.EMAIL)  # no secret
    before = _raw_urls()

    settings.FIELD_ENCRYPTION_KEYS = [key("new key"), key("old key")]
    out = io.StringIO()
    call_command("reencrypt_secrets", stdout=out)
    assert "Re-encrypted 2 secret(s) under the newest key; 0 already were." in out.getvalue()
    assert _raw_urls() != before and "" in _raw_urls()

    settings.FIELD_ENCRYPTION_KEYS = [key("new key")]  # the old key is gone
    urls = {c.user_id: c.chat_url for c in NudgeChannel.objects.all()}
    assert urls[assigner.pk] == "https://hooks.slack.com/services/T/B/one"
    assert urls[assignee.pk] == "https://hooks.slack.com/services/T/B/two"

    out = io.StringIO()
    call_command("reencrypt_secrets", stdout=out)  # again: nothing left to do
    assert "Re-encrypted 0 secret(s) under the newest key; 2 already were." in out.getvalue()


@pytest.mark.django_db
def test_reencrypt_secrets_names_a_value_no_key_can_read_and_fails(settings, assigner, assignee):
    from django.core.management import CommandError, call_command

    settings.FIELD_ENCRYPTION_KEYS = [key("lost key")]
    lost = _slack_for(assigner, settings, "https://hooks.slack.com/services/T/B/lost")
    settings.FIELD_ENCRYPTION_KEYS = [key("kept key")]
    _slack_for(assignee, settings, "https://hooks.slack.com/services/T/B/kept")
    settings.FIELD_ENCRYPTION_KEYS = [key("newest key"), key("kept key")]
    with pytest.raises(CommandError) as failure:
        call_command("reencrypt_secrets", stdout=io.StringIO())
    assert "1 secret(s) could be decrypted with none" in str(failure.value)
    assert f"notifications.NudgeChannel.chat_url {lost.pk}" in str(failure.value)
    settings.FIELD_ENCRYPTION_KEYS = [key("newest key")]  # the readable one did move
    from notifications.models import NudgeChannel

    assert (
        NudgeChannel.objects.get(user=assignee).chat_url
        == "https://hooks.slack.com/services/T/B/kept"
    )


@pytest.mark.django_db
def test_a_save_made_during_the_rewrite_wins(settings, assigner, monkeypatch):
    from django.core.management import call_command

    from lib import crypto
    from notifications.models import NudgeChannel

    settings.FIELD_ENCRYPTION_KEYS = [key("old key")]
    _slack_for(assigner, settings, "https://hooks.slack.com/services/T/B/before")
    settings.FIELD_ENCRYPTION_KEYS = [key("new key"), key("old key")]
    real_reencrypt = crypto.reencrypt

    def reencrypt_while_the_owner_saves(token):
        rotated = real_reencrypt(token)
        _slack_for(assigner, settings, "https://hooks.slack.com/services/T/B/after")
        return rotated

    monkeypatch.setattr(crypto, "reencrypt", reencrypt_while_the_owner_saves)
    out = io.StringIO()
    call_command("reencrypt_secrets", stdout=out)
    assert "Re-encrypted 0 secret(s)" in out.getvalue()
    channel = NudgeChannel.objects.get(user=assigner)
    assert channel.chat_url == "https://hooks.slack.com/services/T/B/after"


# --- a value no configured key decrypts ----------------------------------------------


@pytest.mark.django_db
def test_an_encrypted_field_no_key_decrypts_reads_as_a_falsy_marker_not_an_error(
    settings, assigner
):
    from lib.crypto import Undecryptable, is_undecryptable
    from notifications.models import NudgeChannel

    settings.FIELD_ENCRYPTION_KEYS = [key("lost")]
    _slack_for(assigner, settings, "https://hooks.slack.com/services/T/B/gone")
    settings.FIELD_ENCRYPTION_KEYS = [key("current")]

    value = NudgeChannel.objects.get(user=assigner).chat_url

    assert is_undecryptable(value) and isinstance(value, Undecryptable)
    assert not value and str(value) == ""  # never a URL to send to
    assert "stored with an encryption key that is no longer configured" in value.message
    assert "gAAAA" not in repr(value)  # the ciphertext stays out of logs and tracebacks
