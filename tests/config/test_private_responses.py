"""What a signed-in person is shown is theirs: every response to someone signed
in (pages, the Accord's fragment, polling JSON, the API's answers to a token)
says `Cache-Control: private, no-store` (config.middleware.
PrivateResponsesMiddleware), so no shared proxy or browser disk keeps it for
the next person; public pages stay cacheable."""

from __future__ import annotations

import json

import pytest

from audit.services import Actor
from commitments import services as commitment_services
from integrations import services as token_services
from tests.harness.api import INBOX, inbox_body


def directives(response) -> set[str]:
    return {part.strip() for part in response.get("Cache-Control", "").split(",") if part.strip()}


@pytest.fixture
def pending(assigner, assignee):
    return commitment_services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Write the quarterly report",
        deadline=None,
    )


@pytest.mark.parametrize(
    "path",
    ["/", "/accord/fragment", "/dashboard/", "/settings/", "/commitments/new", "{commitment}"],
)
def test_every_signed_in_page_is_private_and_not_stored(client, assignee, pending, path):
    client.force_login(assignee)

    response = client.get(path.format(commitment=f"/commitments/{pending.pk}"))

    assert response.status_code == 200
    assert {"private", "no-store"} <= directives(response)


def test_an_error_page_for_someone_signed_in_is_private_too(client, outsider, pending):
    client.force_login(outsider)  # another person's commitment: 404, the frame names them

    response = client.get(f"/commitments/{pending.pk}")

    assert response.status_code == 404
    assert {"private", "no-store"} <= directives(response)


def test_an_answer_to_a_token_is_private_and_not_stored(client, assigner, assignee):
    token = token_services.api_token_mint(user=assigner, name="CI").plaintext

    response = client.post(
        INBOX,
        data=json.dumps(inbox_body()),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )

    assert response.status_code == 201
    assert {"private", "no-store"} <= directives(response)


def test_a_response_that_already_says_no_store_is_left_as_it_is(client, make_user):
    """The webhook delivery status (never_cache) keeps its own header."""
    import uuid

    client.force_login(make_user())

    response = client.get(f"/settings/webhooks/deliveries/{uuid.uuid4()}/status")

    assert response.status_code == 404
    assert "no-store" in directives(response)
    assert response["Cache-Control"].count("no-store") == 1


@pytest.mark.django_db
def test_public_pages_say_nothing_of_the_kind(client):
    # Static files never reach the middleware: WhiteNoise answers them first.
    for path in ("/api-reference/openapi.json", "/api-reference"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert not {"private", "no-store"} & directives(response), path
