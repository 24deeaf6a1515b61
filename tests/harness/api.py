"""Helpers shared by the API tests (plain functions, so any test module can use them)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.test import Client

from audit.models import AuditEvent
from commitments.models import Commitment, OutboxEvent
from integrations import services

INBOX = "/api/v1/inbox"
SYNC = "/api/v1/sync"
DROP = object()  # inbox_body(description=DROP) leaves the key out


def mint(user, name: str = "Tracker") -> str:
    """A fresh token's plaintext."""
    return services.api_token_mint(user=user, name=name).plaintext


def post_json(
    client: Client, path: str, body: Any, *, token: str | None = None, **headers: str
) -> Any:
    if token is not None:
        headers.setdefault("Authorization", f"Bearer {token}")
    raw = body if isinstance(body, str | bytes) else json.dumps(body)
    content_type = headers.pop("content_type", "application/json")
    return client.post(path, data=raw, content_type=content_type, headers=headers)


def inbox_body(**overrides: Any) -> dict[str, Any]:
    body = {
        "assignerEmail": "lead@example.com",
        "assigneeEmail": "knight@example.com",
        "description": "Ship the quarterly report",
        "deadline": "2030-03-01T17:00:00Z",
        "externalSystem": "jira",
        "externalId": "OPS-42",
    }
    body.update(overrides)
    return {key: value for key, value in body.items() if value is not DROP}


@dataclass(frozen=True)
class Rows:
    commitments: int
    audit_events: int
    outbox_events: int


def rows() -> Rows:
    """What a request may have written: commitments, audit events, outbox rows."""
    return Rows(Commitment.objects.count(), AuditEvent.objects.count(), OutboxEvent.objects.count())


def warm_caches() -> None:
    """A running process has the content-type cache warm after its first write; the
    query budgets are for that steady state."""
    ContentType.objects.get_for_model(Commitment)


def assert_envelope(response, status: int, error: str, *, details: bool | None = None) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["error"] == error
    assert isinstance(body["message"], str) and body["message"]
    assert set(body) <= {"error", "message", "details"}
    if details is True:
        assert isinstance(body["details"], dict) and body["details"]
    elif details is False:
        assert "details" not in body
    return body


PASSWORD = "correct horse battery"  # make_user's
TOKENS_PAGE = "/settings/tokens/"


def sign_in(client: Client, user, password: str = PASSWORD) -> None:
    """Sign in through allauth's form (a fresh sign-in, as minting needs; force_login
    records none). The user's address must be verified (make_user's are)."""
    response = client.post("/accounts/login/", {"login": user.email, "password": password})
    assert response.status_code == 302, response.content
    assert response["Location"] != "/accounts/confirm-email/"


def age_the_sign_in(client: Client, seconds: float) -> None:
    """Makes every sign-in recorded in the client's session `seconds` old."""
    import time

    from allauth.account.authentication import AUTHENTICATION_METHODS_SESSION_KEY

    session = client.session
    records = session[AUTHENTICATION_METHODS_SESSION_KEY]
    for record in records:
        record["at"] = time.time() - seconds
    session[AUTHENTICATION_METHODS_SESSION_KEY] = records
    session.save()


def form_key_in(html: str) -> str:
    """The one-time key (`form_key`) of the form a page renders."""
    import re

    found = re.search(r'name="form_key" value="([^"]+)"', html)
    assert found, "the page has no form_key"
    return found.group(1)


def form_key(client: Client) -> str:
    """The one-time key of a freshly rendered mint form."""
    return form_key_in(client.get(TOKENS_PAGE).content.decode())


def mint_on_the_page(client: Client, name: str, **fields: Any):
    """Mint as a person does: load the form, send it, follow the redirect. The page
    that shows the plaintext once. Both scopes are ticked, as the form comes."""
    fields.setdefault("scopes", ["inbox", "sync"])
    response = client.post(TOKENS_PAGE, {"name": name, "form_key": form_key(client), **fields})
    assert response.status_code == 302, response.content
    assert response["Location"] == TOKENS_PAGE
    return client.get(TOKENS_PAGE)


def inbox_statements(*, in_test_transaction: bool = True) -> int:
    """A steady inbox call's statements (docs/api.md, "Query budgets"), as
    pytest-django counts them. PostgreSQL: the token, the two users, and one
    statement writing the commitment, its audit row and its outbox row
    (lib.db.write_together), a transaction by itself (inside a test's own
    transaction, a SAVEPOINT and RELEASE around it). SQLite: the token, the
    users, BEGIN, the three INSERTs, COMMIT."""
    from django.db import connection

    if connection.vendor == "postgresql":
        return 5 if in_test_transaction else 3
    return 7


def sync_statements() -> int:
    """A completing sync's statements: the token, then on PostgreSQL one
    statement (the compare-and-set UPDATE found by the reference, with the
    audit and outbox INSERTs and the superseding of an open proposal: a
    transaction by itself, no BEGIN and COMMIT); on SQLite BEGIN, the
    commitment read, its UPDATE, the audit and outbox INSERTs, COMMIT."""
    from django.db import connection

    return 2 if connection.vendor == "postgresql" else 7


def sync_replay_statements() -> int:
    """A sync replay's (nothing written): the token, then on PostgreSQL the
    one statement whose UPDATE matches no row and whose second branch reads
    the row, found Completed (lib.db.Decide.found); on SQLite BEGIN, the
    read, COMMIT."""
    from django.db import connection

    return 2 if connection.vendor == "postgresql" else 4
