"""Signatures a receiver can check: `X-Service-Signature` with the secret as
shown and `hmac.compare_digest`, the Standard Webhooks headers with the
`standardwebhooks` package; both over the exact bytes received, and both
secrets during a rotation."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import re

import pytest
import standardwebhooks
from django.utils import timezone

from tests.harness.webhooks import dispatch_all, mapped_active
from webhooks import sending
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import webhook_endpoint_rotate_secret, webhook_test_send
from webhooks.signing import secret_generate, signed_headers

pytestmark = pytest.mark.django_db


def service_signatures(hit_or_headers) -> list[str]:
    value = hit_or_headers.header("X-Service-Signature")
    return [part.removeprefix("sha256=") for part in value.split(",")]


def hmac_ok(secret: str, body: bytes, signatures: list[str]) -> bool:
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, s) for s in signatures)


def standard_ok(secret: str, hit) -> bool:
    try:
        standardwebhooks.Webhook(secret).verify(hit.body, hit.headers)
    except standardwebhooks.WebhookVerificationError:
        return False
    return True


def send_one(assigner, assignee, **kwargs):
    mapped_active(assigner, assignee, **kwargs)
    dispatch_all()
    delivery = WebhookDelivery.objects.order_by("-created_at").first()
    assert sending.webhook_send(delivery_id=delivery.pk) == "delivered"
    return delivery


def test_the_secret_is_whsec_and_base64_of_32_random_bytes():
    secret = secret_generate()
    assert re.fullmatch(r"whsec_[A-Za-z0-9+/]{43}=", secret)
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
    assert secret_generate() != secret


def test_a_receiver_verifies_both_signatures_over_the_bytes_it_got(
    published, receiver, secret, endpoint, assigner, assignee
):
    delivery = send_one(assigner, assignee)

    [hit] = receiver.hits
    assert hit.body == delivery.payload.body.encode()  # the bytes sent are the bytes frozen
    assert hmac_ok(secret, hit.body, service_signatures(hit))
    assert standard_ok(secret, hit)
    assert hit.header("X-Service-Delivery") == hit.header("webhook-id") == str(delivery.pk)
    assert hit.header("X-Service-Event") == "commitment.activated"
    assert hit.header("X-Service-Timestamp") == hit.header("webhook-timestamp")
    assert abs(int(hit.header("X-Service-Timestamp")) - timezone.now().timestamp()) < 60
    assert hit.header("Content-Type") == "application/json"
    assert hit.header("User-Agent").startswith("commitments/")
    assert len(service_signatures(hit)) == 1
    assert len(hit.header("webhook-signature").split(" ")) == 1


def test_a_wrong_secret_or_a_changed_body_does_not_verify(
    published, receiver, secret, endpoint, assigner, assignee
):
    send_one(assigner, assignee)
    [hit] = receiver.hits
    other = secret_generate()
    assert not hmac_ok(other, hit.body, service_signatures(hit))
    assert not standard_ok(other, hit)
    hit.body = hit.body.replace(b"Active", b"Refused")
    assert not hmac_ok(secret, hit.body, service_signatures(hit))
    assert not standard_ok(secret, hit)


def test_during_a_rotation_both_secrets_sign_then_only_the_new_one(
    published, receiver, secret, endpoint, assigner, assignee, monkeypatch
):
    new_secret = webhook_endpoint_rotate_secret(endpoint=endpoint)
    assert new_secret != secret

    send_one(assigner, assignee)
    hit = receiver.hits[-1]
    signatures = service_signatures(hit)
    assert len(signatures) == 2
    assert len(hit.header("webhook-signature").split(" ")) == 2
    # Each verifies with its own secret; the new one comes first.
    assert hmac_ok(new_secret, hit.body, signatures[:1])
    assert hmac_ok(secret, hit.body, signatures[1:])
    assert standard_ok(new_secret, hit)
    assert standard_ok(secret, hit)

    # 24 hours later the old secret is gone: the sweep forgets it, and
    # nothing is signed with it any more.
    later = timezone.now() + dt.timedelta(hours=24, seconds=1)
    from relay.outbox import outbox_sweep

    outbox_sweep(now=later)
    endpoint.refresh_from_db()
    assert endpoint.previous_secret == ""
    assert endpoint.previous_secret_until is None
    send_one(assigner, assignee, external_id="OPS-43")
    hit = receiver.hits[-1]
    assert len(service_signatures(hit)) == 1
    assert hmac_ok(new_secret, hit.body, service_signatures(hit))
    assert not hmac_ok(secret, hit.body, service_signatures(hit))
    assert standard_ok(new_secret, hit)
    assert not standard_ok(secret, hit)


def test_an_expired_previous_secret_never_signs_even_before_the_sweep(db, assigner):
    endpoint = WebhookEndpoint(
        user=assigner,
        external_system="jira",
        url="https://example.com/",
        secret=secret_generate(),
        previous_secret=secret_generate(),
        previous_secret_until=dt.datetime(2026, 1, 2, tzinfo=dt.UTC),
    )
    before = dt.datetime(2026, 1, 1, 23, 59, tzinfo=dt.UTC)
    after = dt.datetime(2026, 1, 2, 0, 0, tzinfo=dt.UTC)
    assert endpoint.signing_secrets(before) == [endpoint.secret, endpoint.previous_secret]
    assert endpoint.signing_secrets(after) == [endpoint.secret]


def test_the_service_signature_key_is_the_secret_as_shown_and_the_standard_key_its_bytes():
    secret = secret_generate()
    body = b'{"event":"commitment.completed"}'
    headers = signed_headers(
        secrets=[secret], delivery_id="msg_1", event_name="e", timestamp=1700000000, body=body
    )
    expected_hex = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    assert headers["X-Service-Signature"] == f"sha256={expected_hex}"
    key = base64.b64decode(secret.removeprefix("whsec_"))
    expected_b64 = base64.b64encode(
        hmac.new(key, b"msg_1.1700000000." + body, hashlib.sha256).digest()
    ).decode()
    assert headers["webhook-signature"] == f"v1,{expected_b64}"


def test_a_test_event_is_marked_and_signed(published, receiver, secret, endpoint):
    delivery = webhook_test_send(endpoint=endpoint)
    assert ("deliver_webhook", str(delivery.pk)) not in published  # queued after commit only
    assert sending.webhook_send(delivery_id=delivery.pk) == "delivered"
    [hit] = receiver.hits
    assert hit.header("X-Service-Event") == "commitment.test"
    body = standardwebhooks.Webhook(secret).verify(hit.body, hit.headers)
    assert body["event"] == "commitment.test"
    assert body["test"] is True
    assert body["id"] == "00000000-0000-0000-0000-000000000000"
    assert hmac_ok(secret, hit.body, service_signatures(hit))
