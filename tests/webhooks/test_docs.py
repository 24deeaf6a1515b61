"""docs/webhooks.md cannot drift from what the service sends: its Python
examples are run, as written, against bodies and headers made by the
service's own envelope and signing code (webhooks.payloads, webhooks.signing);
its example envelopes have the fields the service writes, its header table
names the headers it sends, and its retry schedule is settings.WEBHOOK_RETRY_SCHEDULE."""

from __future__ import annotations

import datetime as dt
import json
import re
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest
from django.conf import settings

from commitments.machine import MOVES
from commitments.models import Status
from webhooks import payloads
from webhooks.signing import secret_generate, signed_headers

if TYPE_CHECKING:
    from commitments.models import OutboxEvent

DOCS = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"
TEXT = DOCS.read_text()
FENCED = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in FENCED.findall(TEXT) if lang == language]


@pytest.fixture(scope="module")
def receiver() -> dict:
    """The namespace the documentation's Python blocks define, run in order."""
    namespace: dict = {"__name__": "docs_webhooks"}
    for code in blocks("python"):
        exec(compile(code, str(DOCS), "exec"), namespace)  # our own docs, run as written
    return namespace


# The move of the state machine behind each event, and where it leads.
MOVE_OF = {
    "commitment.activated": ("accept", Status.ACTIVE),
    "commitment.refused": ("decline", Status.REFUSED),
    "commitment.renegotiated": ("renegotiate", Status.PENDING_HANDSHAKE),
    "commitment.completed": ("complete", Status.COMPLETED),
    # The conversation's events (issue 26); None: the status does not change.
    "commitment.proposed": ("propose", Status.PENDING_HANDSHAKE),
    "commitment.proposal_declined": ("decline_proposal", Status.PENDING_HANDSHAKE),
    "commitment.extension_requested": ("request_extension", Status.ACTIVE),
    "commitment.extension_granted": ("grant_extension", Status.ACTIVE),
    "commitment.extension_declined": ("decline_extension", Status.ACTIVE),
    "commitment.withdrawn": ("withdraw", Status.WITHDRAWN),
    "commitment.reassigned": ("reassign", Status.PENDING_HANDSHAKE),
    "commitment.commented": ("comment", None),
}


def envelope(
    event_name: str, *, actor_kind: str = "api_token", previous: str = Status.ACTIVE
) -> dict:
    """What the service sends for `event_name`, from its own envelope code."""
    commitment = SimpleNamespace(pk=uuid.uuid4(), external_system="jira", external_id="OPS-1234")
    new = MOVE_OF[event_name][1] or previous
    event = SimpleNamespace(
        commitment=commitment,
        actor_kind=actor_kind,
        actor_user_id=uuid.uuid4(),
        actor_token_id=uuid.uuid4() if actor_kind == "api_token" else None,
        previous_status=previous,
        new_status=new,
        occurred_at=dt.datetime(2026, 11, 27, 16, 45, 31, 62_000, tzinfo=dt.UTC),
    )
    # A stand-in with the fields the envelope reads, not a row.
    return payloads.event_envelope(cast("OutboxEvent", event), event_name=event_name)


def signed(body: bytes, *secrets: str, timestamp: int | None = None) -> dict[str, str]:
    return signed_headers(
        secrets=list(secrets),
        delivery_id=str(uuid.uuid4()),
        event_name="commitment.completed",
        timestamp=int(time.time()) if timestamp is None else timestamp,
        body=body,
    )


@pytest.fixture
def body() -> bytes:
    return payloads.encode(envelope("commitment.completed")).encode()


# --- the envelope and the headers, as documented ------------------------------------------


def test_every_event_has_a_documented_example_with_exactly_the_fields_sent():
    examples = {json.loads(b)["event"]: json.loads(b) for b in blocks("json")}
    assert set(examples) == {*payloads.TIMESTAMP_FIELDS, payloads.TEST_EVENT}
    for name, example in examples.items():
        if name == payloads.TEST_EVENT:
            sent = payloads.test_envelope(
                external_system="jira",
                user_id=uuid.uuid4(),
                now=dt.datetime.now(dt.UTC),
                events=example["events"],
            )
            assert example["events"][:4] == list(payloads.CONTRACT_EVENTS)
            assert set(example["events"][4:]) <= set(payloads.OPTIONAL_EVENTS)
        else:
            sent = envelope(
                name, actor_kind=example["actor"]["kind"], previous=example["previousStatus"]
            )
            move, leads_to = MOVE_OF[name]
            assert example["previousStatus"] in MOVES[move].from_statuses, name
            assert example["newStatus"] == (leads_to or example["previousStatus"]), name
            if name in payloads.PROPOSAL_EVENTS:
                assert set(example["proposal"]) == set(sent["proposal"]) == {"id", "deadline"}
                assert re.fullmatch(
                    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", example["proposal"]["deadline"]
                )
        assert list(example) == list(sent), name
        assert set(example["actor"]) == set(sent["actor"]), name
        for field in ("timestamp", payloads.TIMESTAMP_FIELDS.get(name, "completedAt")):
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", example[field])


def test_the_event_tables_name_every_event_and_its_timestamp_field():
    """The two tables of "Events": the four and the test, then the eight an
    endpoint chooses, each with the timestamp field the service writes."""
    table = TEXT[TEXT.index("## Events") : TEXT.index("## Choosing events")]
    rows = re.findall(r"^\| `(commitment\.[a-z_]+)` \|.*\| `(\w+)` \|$", table, re.MULTILINE)
    documented = dict(rows)
    assert len(rows) == len(documented)
    assert documented == {**payloads.TIMESTAMP_FIELDS, payloads.TEST_EVENT: "completedAt"}
    optional = [name for name, _ in rows if name in payloads.OPTIONAL_EVENTS]
    assert optional == list(payloads.OPTIONAL_EVENTS)  # in the page's order


def test_the_header_table_names_every_header_sent_and_the_user_agent():
    table = TEXT[TEXT.index("## Headers") : TEXT.index("## Verifying with `hmac`")]
    documented = re.findall(r"^\| `([^`]+)` \|", table, re.MULTILINE)
    sent = signed(b"{}", secret_generate())
    assert sorted(documented) == sorted(sent)
    assert f"| `User-Agent` | `{sent['User-Agent']}` |" in table


def test_the_documented_retry_schedule_is_the_one_used():
    def spoken(seconds: int) -> str:
        for unit, size in (("hour", 3600), ("minute", 60), ("second", 1)):
            if seconds % size == 0:
                n = seconds // size
                return f"{n} {unit}{'s' if n != 1 else ''}"
        raise AssertionError(seconds)

    words = [spoken(gap) for gap in settings.WEBHOOK_RETRY_SCHEDULE]
    sentence = ", ".join(words[:-1]) + " and " + words[-1] + " after the previous attempt"
    assert sentence in " ".join(TEXT.split())
    assert "a last attempt 24 hours after the first" in " ".join(TEXT.split())


# --- the Python examples, run ----------------------------------------------------------


def test_the_hmac_example_verifies_what_the_service_signs(receiver, body):
    secret = secret_generate()
    header = signed(body, secret)["X-Service-Signature"]
    verify = receiver["verify_service_signature"]

    assert verify(secret, body, header) is True
    assert verify(secret_generate(), body, header) is False
    assert verify(secret, body.replace(b"OPS-1234", b"OPS-1235"), header) is False


def test_the_standardwebhooks_example_verifies_what_the_service_signs(receiver, body):
    secret = secret_generate()
    headers = signed(body, secret)
    verify, refused = receiver["verify_standard_webhooks"], receiver["WebhookVerificationError"]

    assert verify(secret, body, headers) == json.loads(body)
    with pytest.raises(refused):
        verify(secret_generate(), body, headers)
    with pytest.raises(refused):  # captured and played back an hour later
        verify(secret, body, signed(body, secret, timestamp=int(time.time()) - 3600))


def test_during_a_rotation_either_secret_verifies_with_every_example(receiver, body):
    old, new = secret_generate(), secret_generate()
    headers = signed(body, new, old)  # as the service signs during the 24 hours

    assert len(headers["X-Service-Signature"].split(",")) == 2
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):
        assert receiver["verify_service_signature"](secret, body, headers["X-Service-Signature"])
        assert receiver["verify_standard_webhooks"](secret, body, headers) == json.loads(body)
    assert receiver["verify_during_rotation"](old, new, body, headers["X-Service-Signature"])
    # After the 24 hours only the new secret signs: a receiver still on the old one refuses.
    after = signed(body, new)
    assert not receiver["verify_service_signature"](old, body, after["X-Service-Signature"])
    assert receiver["verify_during_rotation"](old, new, body, after["X-Service-Signature"])


def test_the_receiver_example_verifies_and_drops_a_duplicate_delivery(receiver, body, capsys):
    secret = secret_generate()
    headers = signed(body, secret)
    handle = receiver["handle_webhook"]

    assert handle(secret, headers, body) == 204
    assert capsys.readouterr().out == "OPS-1234 is now Completed\n"
    assert handle(secret, headers, body) == 200  # a retry: same delivery id, not acted on
    assert capsys.readouterr().out == ""
    assert handle(secret_generate(), signed(body, secret), body) == 401


def test_the_receiver_example_refuses_a_captured_request_replayed_with_a_new_delivery_id(
    receiver, body, capsys
):
    """Issue 16, point 5: the old example deduplicated on X-Service-Delivery,
    which no signature covers, so a captured request resent with a new id
    was accepted and acted on again."""
    secret = secret_generate()
    headers = signed(body, secret)
    handle = receiver["handle_webhook"]
    assert handle(secret, headers, body) == 204
    capsys.readouterr()

    new_id = str(uuid.uuid4())
    # The unsigned id changed: the signed one is a duplicate, not acted on.
    assert handle(secret, {**headers, "X-Service-Delivery": new_id}, body) == 200
    # The signed id changed too (or alone): the signature no longer matches.
    assert (
        handle(secret, {**headers, "X-Service-Delivery": new_id, "webhook-id": new_id}, body) == 401
    )
    assert handle(secret, {**headers, "webhook-id": new_id}, body) == 401
    assert capsys.readouterr().out == ""  # acted on once, whatever was replayed


def test_the_receiver_example_refuses_a_request_outside_the_timestamp_tolerance(
    receiver, body, capsys
):
    secret = secret_generate()
    handle = receiver["handle_webhook"]
    now = int(time.time())

    assert handle(secret, signed(body, secret, timestamp=now - 6 * 60), body) == 401
    assert handle(secret, signed(body, secret, timestamp=now + 6 * 60), body) == 401
    # A timestamp changed to a fresh one breaks the signature.
    old = signed(body, secret, timestamp=now - 3600)
    assert handle(secret, {**old, "webhook-timestamp": str(now)}, body) == 401
    assert capsys.readouterr().out == ""
    assert handle(secret, signed(body, secret, timestamp=now - 4 * 60), body) == 204


def test_the_receiver_s_verifier_accepts_either_secret_during_a_rotation(receiver, body):
    old, new = secret_generate(), secret_generate()
    headers = signed(body, new, old)
    verify = receiver["verify_webhook"]

    assert verify(old, headers, body) == verify(new, headers, body) == json.loads(body)
    assert verify(secret_generate(), headers, body) is None
    assert verify(new, headers, body.replace(b"OPS-1234", b"OPS-1235")) is None


def test_the_docs_say_which_headers_are_authenticated():
    table = TEXT[TEXT.index("## Headers") : TEXT.index("## Verifying with `hmac`")]
    rows = dict(re.findall(r"^\| `([^`]+)` \|.*\| ([^|]+) \|$", table, re.MULTILINE))
    assert rows["X-Service-Delivery"].startswith("**no**")
    assert rows["X-Service-Timestamp"].startswith("**no**")
    assert rows["webhook-id"].startswith("yes") and rows["webhook-timestamp"].startswith("yes")
    assert "dedupes" not in TEXT and "use `X-Service-Delivery` to drop duplicates" not in TEXT
