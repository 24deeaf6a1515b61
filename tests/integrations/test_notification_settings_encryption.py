"""Secrets at rest: the Fernet helper behind encrypted fields (webhook URLs now,
webhook secrets and provider keys later)."""

from __future__ import annotations

import pytest

from integrations.crypto import DecryptionError, decrypt_str, encrypt_str, reencrypt


def test_a_secret_round_trips_and_is_not_readable_at_rest(settings):
    settings.FIELD_ENCRYPTION_KEYS = ["key one"]
    token = encrypt_str("https://hooks.slack.com/services/T/B/secret")
    assert "secret" not in token and "slack" not in token
    assert decrypt_str(token) == "https://hooks.slack.com/services/T/B/secret"


def test_the_same_secret_encrypts_differently_each_time(settings):
    settings.FIELD_ENCRYPTION_KEYS = ["key one"]
    assert encrypt_str("same") != encrypt_str("same")


def test_a_key_is_rotated_by_prepending_a_new_one(settings):
    settings.FIELD_ENCRYPTION_KEYS = ["old key"]
    old_token = encrypt_str("secret")
    settings.FIELD_ENCRYPTION_KEYS = ["new key", "old key"]
    assert decrypt_str(old_token) == "secret"
    new_token = reencrypt(old_token)
    settings.FIELD_ENCRYPTION_KEYS = ["new key"]
    assert decrypt_str(new_token) == "secret"
    with pytest.raises(DecryptionError):
        decrypt_str(old_token)


def test_a_value_no_key_can_read_is_an_error_not_garbage(settings):
    settings.FIELD_ENCRYPTION_KEYS = ["one"]
    token = encrypt_str("secret")
    settings.FIELD_ENCRYPTION_KEYS = ["another"]
    with pytest.raises(DecryptionError):
        decrypt_str(token)
