"""gather.services and gather.selectors: a user's own model keys, stored
encrypted, shown by their last four characters, replaced and deleted, one of them the default that
capture uses; a key no configured encryption key reads is never used."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.db import connection

from audit.models import AuditEvent
from gather import errors, selectors, services
from gather.models import ModelKey, Provider
from tests.harness.concurrency import race

pytestmark = pytest.mark.django_db

OPENAI_KEY = "sk-proj-test-openai-0123456789abcdWXYZ"
ANTHROPIC_KEY = "sk-ant-api03-test-anthropic-9876543210LMNO"


def raw_key_column(stored: ModelKey) -> str:
    """The column as the database holds it, bypassing the field's decryption."""
    table = connection.ops.quote_name(ModelKey._meta.db_table)
    pk = ModelKey._meta.pk.get_db_prep_value(stored.pk, connection)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {connection.ops.quote_name('key')} FROM {table} WHERE id = %s", [pk]
        )
        return cursor.fetchone()[0]


def test_the_stored_key_is_encrypted_and_only_its_last_four_are_kept_in_the_clear(assigner):
    stored = services.model_key_set(user=assigner, provider="openai", key=f"  {OPENAI_KEY}\n")

    raw = raw_key_column(stored)
    assert OPENAI_KEY not in raw and "WXYZ" not in raw
    assert stored.last4 == "WXYZ"
    again = ModelKey.objects.get(pk=stored.pk)
    assert again.key == OPENAI_KEY  # decrypts back, stripped


def test_model_defaults_to_the_providers_default_from_settings(assigner, settings):
    settings.GATHER_DEFAULT_MODELS = {"openai": "small-o", "anthropic": "small-a"}

    openai = services.model_key_set(user=assigner, provider="openai", key=OPENAI_KEY)
    anthropic = services.model_key_set(
        user=assigner, provider="anthropic", key=ANTHROPIC_KEY, model="claude-custom"
    )

    assert (openai.model, anthropic.model) == ("small-o", "claude-custom")


def test_the_newest_stored_key_becomes_the_default(assigner):
    services.model_key_set(user=assigner, provider="openai", key=OPENAI_KEY)
    services.model_key_set(user=assigner, provider="anthropic", key=ANTHROPIC_KEY)

    defaults = ModelKey.objects.filter(user=assigner, is_default=True)
    assert [key.provider for key in defaults] == ["anthropic"]
    assert selectors.model_key_for_gather(user=assigner).provider == "anthropic"

    services.model_key_make_default(user=assigner, provider="openai")
    assert selectors.model_key_for_gather(user=assigner).provider == "openai"
    assert ModelKey.objects.filter(user=assigner, is_default=True).count() == 1


def test_replacing_a_key_keeps_one_row_and_makes_it_the_default(assigner):
    services.model_key_set(user=assigner, provider="openai", key=OPENAI_KEY)
    services.model_key_set(user=assigner, provider="anthropic", key=ANTHROPIC_KEY)

    replaced = services.model_key_set(
        user=assigner, provider="openai", key="sk-new-key-1234", model="gpt-x"
    )

    rows = ModelKey.objects.filter(user=assigner, provider="openai")
    assert rows.count() == 1
    assert (replaced.key, replaced.last4, replaced.model) == ("sk-new-key-1234", "1234", "gpt-x")
    assert selectors.model_key_for_gather(user=assigner).pk == replaced.pk


def test_deleting_the_default_makes_the_other_key_the_default(assigner):
    services.model_key_set(user=assigner, provider="openai", key=OPENAI_KEY)
    services.model_key_set(user=assigner, provider="anthropic", key=ANTHROPIC_KEY)

    assert services.model_key_delete(user=assigner, provider="anthropic") is True
    assert services.model_key_delete(user=assigner, provider="anthropic") is False

    remaining = ModelKey.objects.get(user=assigner)
    assert (remaining.provider, remaining.is_default) == ("openai", True)
    assert services.model_key_delete(user=assigner, provider="openai") is True
    assert selectors.model_key_for_gather(user=assigner) is None


def test_keys_are_per_user(assigner, assignee):
    services.model_key_set(user=assigner, provider="openai", key=OPENAI_KEY)

    assert selectors.model_key_for_gather(user=assignee) is None
    services.model_key_set(user=assignee, provider="openai", key="sk-other-0000")
    assert selectors.model_key_for_gather(user=assigner).key == OPENAI_KEY


@pytest.mark.parametrize(
    ("provider", "key", "field"),
    [("mistral", OPENAI_KEY, "provider"), ("openai", "   ", "key"), ("openai", "sk a b", "key")],
)
def test_refuses_an_unknown_provider_or_an_empty_key(assigner, provider, key, field):
    with pytest.raises(errors.ModelKeyError) as refused:
        services.model_key_set(user=assigner, provider=provider, key=key)
    assert refused.value.field == field
    assert not ModelKey.objects.exists()


def test_set_replace_default_and_delete_are_audited_without_the_key(assigner):
    services.model_key_set(user=assigner, provider="openai", key=OPENAI_KEY)
    services.model_key_set(user=assigner, provider="openai", key="sk-replacement-5678")
    services.model_key_set(user=assigner, provider="anthropic", key=ANTHROPIC_KEY)
    services.model_key_make_default(user=assigner, provider="openai")
    services.model_key_delete(user=assigner, provider="openai")

    events = list(AuditEvent.objects.order_by("occurred_at", "pk"))
    actions = [event.action for event in events]
    assert actions == [
        "model_key_set",
        "model_key_replaced",
        "model_key_set",
        "model_key_made_default",
        "model_key_deleted",
    ]
    assert all(event.user_id == assigner.pk for event in events)
    dumped = repr([event.payload for event in events])
    for secret in (OPENAI_KEY, "sk-replacement-5678", ANTHROPIC_KEY, "5678", "WXYZ"):
        assert secret not in dumped


def test_an_undecryptable_key_is_not_used_and_the_readable_one_is(assigner, settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEYS = [old]
    services.model_key_set(user=assigner, provider="openai", key=OPENAI_KEY)
    services.model_key_set(user=assigner, provider="anthropic", key=ANTHROPIC_KEY)  # default
    settings.FIELD_ENCRYPTION_KEYS = [new]

    assert selectors.model_key_for_gather(user=assigner) is None
    lost = ModelKey.objects.get(user=assigner, provider="anthropic")
    assert lost.unreadable and not lost.usable

    services.model_key_set(user=assigner, provider="openai", key="sk-entered-again-4321")
    services.model_key_make_default(user=assigner, provider="anthropic")  # still unreadable

    usable = selectors.model_key_for_gather(user=assigner)
    assert (usable.provider, usable.key) == ("openai", "sk-entered-again-4321")


def test_providers_are_openai_and_anthropic():
    assert Provider.values == ["openai", "anthropic"]


@pytest.mark.postgres
def test_keys_stored_at_once_leave_one_row_per_provider_and_one_default(assigner):
    calls = [
        lambda provider=provider, n=n: (
            services.model_key_set(
                user=assigner, provider=provider, key=f"sk-race-{provider}-{n:04d}"
            ).pk
        )
        for n in range(4)
        for provider in ("openai", "anthropic")
    ]

    race(calls)

    stored = ModelKey.objects.filter(user=assigner)
    assert sorted(key.provider for key in stored) == ["anthropic", "openai"]
    assert stored.filter(is_default=True).count() == 1
