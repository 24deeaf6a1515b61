"""API tokens: shape, storage, minting and revoking, the operator command, and
that a plaintext is stored nowhere."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import re
import string
import zlib

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection

from audit.models import AuditEvent
from audit.services import Actor
from integrations import services, tokens
from integrations.models import ApiToken
from tests.harness.api import (
    INBOX,
    SYNC,
    inbox_body,
    mint_on_the_page,
    post_json,
    sign_in,
)

ALPHABET = set(string.ascii_letters + string.digits)


def _base62_decode(text: str) -> int:
    digits = string.digits + string.ascii_uppercase + string.ascii_lowercase
    value = 0
    for char in text:
        value = value * 62 + digits.index(char)
    return value


# --- shape ---------------------------------------------------------------------------


def test_a_token_is_svc_then_30_random_then_a_6_character_crc32_checksum():
    plaintext = tokens.generate()
    assert plaintext.startswith("svc_")
    assert len(plaintext) == 40
    body = plaintext[4:]
    assert set(body) <= ALPHABET
    random_part, check = body[:30], body[30:]
    assert _base62_decode(check) == zlib.crc32(random_part.encode())
    assert tokens.has_valid_shape(plaintext)


def test_tokens_are_not_repeated():
    assert len({tokens.generate() for _ in range(200)}) == 200


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t.replace("svc_", "ghp_"),
        lambda t: t[:-1],
        lambda t: t + "0",
        lambda t: t[:10] + ("A" if t[10] != "A" else "B") + t[11:],  # random part changed
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),  # checksum changed
        lambda t: t + "\n",
        lambda t: " " + t,
        lambda t: t[:20] + "é" + t[21:],
        lambda t: t.upper(),
        lambda t: "",
    ],
)
def test_it_tells_a_mistyped_token_by_its_shape(mangle):
    plaintext = tokens.generate()
    assert not tokens.has_valid_shape(mangle(plaintext))


def test_the_digest_is_sha256_of_the_plaintext_and_matching_is_exact():
    plaintext = tokens.generate()
    assert tokens.digest(plaintext) == hashlib.sha256(plaintext.encode()).hexdigest()
    assert tokens.matches(plaintext, tokens.digest(plaintext))
    assert not tokens.matches(tokens.generate(), tokens.digest(plaintext))


# --- minting and revoking ----------------------------------------------------------


def test_minting_stores_only_the_digest_and_a_display_prefix(assigner):
    minted = services.api_token_mint(user=assigner, name="  Jira  ")
    token = ApiToken.objects.get()
    assert token == minted.token
    assert token.user == assigner
    assert token.name == "Jira"
    assert token.digest == hashlib.sha256(minted.plaintext.encode()).hexdigest()
    assert token.prefix == minted.plaintext[:12]
    assert token.last_used_at is None and token.revoked_at is None
    assert minted.plaintext not in repr(minted)


def test_minting_is_audited_without_the_plaintext(assigner):
    minted = services.api_token_mint(user=assigner, name="Jira")
    event = AuditEvent.objects.get(action="api_token_minted")
    assert event.user == assigner
    assert event.subject_id == minted.token.id
    assert event.payload == {
        "name": "Jira",
        "prefix": minted.token.prefix,
        "ownerId": str(assigner.pk),
        "scopes": ["inbox", "sync", "read"],
        "networks": [],
    }


@pytest.mark.parametrize("name", ["", "   ", "x" * 101])
def test_minting_refuses_a_blank_or_overlong_name(assigner, name):
    with pytest.raises(Exception, match="name"):
        services.api_token_mint(user=assigner, name=name)
    assert not ApiToken.objects.exists()


def test_revoking_stamps_the_token_once(assigner):
    token = services.api_token_mint(user=assigner, name="Jira").token
    actor = Actor.for_user(assigner)
    assert services.api_token_revoke(actor=actor, token=token) is True
    stamped = ApiToken.objects.get().revoked_at
    assert stamped is not None
    assert services.api_token_revoke(actor=actor, token=token) is False
    assert ApiToken.objects.get().revoked_at == stamped
    assert AuditEvent.objects.filter(action="api_token_revoked").count() == 1


# --- the operator command ------------------------------------------------------------


def test_mint_token_prints_the_plaintext_as_the_last_line(assigner):
    out, err = io.StringIO(), io.StringIO()
    call_command("mint_token", "LEAD@example.com", "--name", "CI", stdout=out, stderr=err)
    lines = (err.getvalue() + out.getvalue()).strip().splitlines()
    plaintext = out.getvalue().strip().splitlines()[-1]
    assert lines[-1] == plaintext
    assert tokens.has_valid_shape(plaintext)
    token = ApiToken.objects.get(digest=tokens.digest(plaintext))
    assert token.user == assigner and token.name == "CI"
    assert token.prefix in err.getvalue()


def test_a_minted_command_token_works_on_the_api(assigner, assignee, client):
    out = io.StringIO()
    call_command("mint_token", "lead@example.com", "--name", "CI", stdout=out, stderr=io.StringIO())
    plaintext = out.getvalue().strip().splitlines()[-1]
    assert post_json(client, INBOX, inbox_body(), token=plaintext).status_code == 201


def test_mint_token_refuses_an_unknown_email(db):
    with pytest.raises(CommandError, match="No user"):
        call_command(
            "mint_token",
            "nobody@example.com",
            "--name",
            "CI",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
    assert not ApiToken.objects.exists()


def test_mint_token_requires_a_name(assigner):
    with pytest.raises(CommandError):
        call_command("mint_token", "lead@example.com", stdout=io.StringIO(), stderr=io.StringIO())


# --- the plaintext is nowhere at rest --------------------------------------------------


def _every_text_in_the_database() -> str:
    chunks: list[str] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                chunks.extend(
                    bytes(value).decode("latin-1")
                    if isinstance(value, bytes | memoryview)
                    else str(value)
                    for value in row
                )
    return "\n".join(chunks)


def test_the_plaintext_of_a_token_is_stored_nowhere(assigner, assignee, client):
    # Minted all three ways, then used (audit rows, last_used_at) and revoked.
    from_service = services.api_token_mint(user=assigner, name="service").plaintext
    out = io.StringIO()
    call_command(
        "mint_token", "lead@example.com", "--name", "command", stdout=out, stderr=io.StringIO()
    )
    from_command = out.getvalue().strip().splitlines()[-1]
    sign_in(client, assigner)
    page = mint_on_the_page(client, "page")  # POST, then the GET that shows it once
    from_page = re.search(r"svc_[0-9A-Za-z]{36}", page.content.decode()).group(0)
    assert post_json(client, INBOX, inbox_body(), token=from_service).status_code == 201
    sync = {"externalSystem": "jira", "externalId": "OPS-42", "status": "Completed"}
    assert post_json(client, SYNC, sync, token=from_page).status_code == 409
    token = ApiToken.objects.get(name="command")
    services.api_token_revoke(actor=Actor.for_user(assigner), token=token)
    assert post_json(client, SYNC, sync, token=from_command).status_code == 401

    dump = _every_text_in_the_database()
    assert ApiToken.objects.count() == 3
    assert "svc_" in dump  # the dump does see the display prefixes
    for plaintext in (from_service, from_command, from_page):
        assert plaintext not in dump
        assert plaintext[12:] not in dump  # nor the secret part beyond the prefix
        assert tokens.digest(plaintext) in dump


def test_mint_token_may_set_an_expiry_and_still_prints_the_token_last(assigner):
    out = io.StringIO()
    call_command(
        "mint_token",
        "lead@example.com",
        "--name",
        "CI",
        "--expires",
        "2099-12-31",
        stdout=out,
        stderr=io.StringIO(),
    )
    plaintext = out.getvalue().strip().splitlines()[-1]
    token = ApiToken.objects.get()
    assert token.digest == tokens.digest(plaintext)
    assert token.expires_at == services.expiry_at_end_of(dt.date(2099, 12, 31), "UTC")


def test_mint_token_refuses_an_expiry_in_the_past(assigner):
    with pytest.raises(CommandError, match="future"):
        call_command(
            "mint_token",
            "lead@example.com",
            "--name",
            "CI",
            "--expires",
            "2000-01-01",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
    assert not ApiToken.objects.exists()


def test_a_second_live_token_with_the_same_name_is_refused_by_the_service(assigner):
    services.api_token_mint(user=assigner, name="CI")
    with pytest.raises(ValidationError, match="already have a live token"):
        services.api_token_mint(user=assigner, name="CI")
    assert ApiToken.objects.count() == 1
