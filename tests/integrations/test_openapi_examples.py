"""The example bodies the API reference shows (and Swagger UI's Try it out starts
from) work as they are: posted unchanged, the inbox example creates a commitment
and the sync example completes it."""

from __future__ import annotations

import pytest

from audit.services import Actor
from commitments import services
from commitments.models import Commitment, Status
from tests.harness.api import INBOX, SYNC, mint, post_json

pytestmark = pytest.mark.django_db


def request_examples(client, path: str) -> list[dict]:
    document = client.get("/api-reference/openapi.json").json()
    content = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    return [example["value"] for example in content["examples"].values()]


def test_the_documented_inbox_and_sync_bodies_work_as_they_are(client, make_user):
    (inbox,) = request_examples(client, INBOX)
    (sync,) = request_examples(client, SYNC)
    assigner = make_user(inbox["assignerEmail"])
    assignee = make_user(inbox["assigneeEmail"])
    token = mint(assigner)

    response = post_json(client, INBOX, inbox, token=token)

    assert response.status_code == 201, response.content
    commitment = Commitment.objects.get()
    assert (commitment.external_system, commitment.external_id) == (
        sync["externalSystem"],
        sync["externalId"],
    )
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)

    response = post_json(client, SYNC, sync, token=token)

    assert response.status_code == 200, response.content
    assert response.json()["changed"] is True
    commitment.refresh_from_db()
    assert commitment.status == Status.COMPLETED


def test_the_reads_work_from_the_try_it_client_as_documented(client, make_user):
    """What Try it out sends for the reads: the list with no parameter filled
    in, then one commitment by an id the list (or the inbox) gave; the
    parameters carry no example values that Swagger UI would fill in and send."""
    document = client.get("/api-reference/openapi.json").json()
    for path in ("/api/v1/commitments", "/api/v1/commitments/{id}"):
        for parameter in document["paths"][path]["get"]["parameters"]:
            if parameter["in"] == "query":
                assert "example" not in parameter and "examples" not in parameter
    (inbox,) = request_examples(client, INBOX)
    assigner = make_user(inbox["assignerEmail"])
    make_user(inbox["assigneeEmail"])
    token = mint(assigner)
    assert post_json(client, INBOX, inbox, token=token).status_code == 201
    auth = {"Authorization": f"Bearer {token}"}

    listed = client.get("/api/v1/commitments", headers=auth)

    assert listed.status_code == 200, listed.content
    (row,) = listed.json()["results"]
    assert (row["externalSystem"], row["externalId"]) == (
        inbox["externalSystem"],
        inbox["externalId"],
    )
    one = client.get(f"/api/v1/commitments/{row['id']}", headers=auth)
    assert one.status_code == 200
    assert one.json()["history"][0]["actorKind"] == "api_token"
