"""The read API (docs/api.md, "GET /api/v1/commitments"): one commitment with
its history, and the token owner's commitments in filtered cursor pages, with
ETags; only what the owner asked or was asked, anything else 404 or absent."""

from __future__ import annotations

import datetime as dt
import uuid
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from django.utils import timezone

from audit.services import Actor
from commitments import links, services
from commitments.models import Commitment, Status
from integrations.serializers import (
    CommitmentDetailSerializer,
    CommitmentSerializer,
    HistoryEntrySerializer,
)
from tests.harness.api import INBOX, assert_envelope, inbox_body, mint, post_json, rows

LIST = "/api/v1/commitments"
JIRA = "https://example.atlassian.net/browse/{externalId}"


def one(pk) -> str:
    return f"{LIST}/{pk}"


def get(client: Client, path: str, token: str, *, data=None, **headers: str):
    headers.setdefault("Authorization", f"Bearer {token}")
    return client.get(path, data=data, headers=headers)


def pending(assigner, assignee, *, external_id: str | None = "OPS-42", via=None) -> Commitment:
    return services.commitment_create_pending(
        actor=via or Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description=f"Ship {external_id}",
        deadline=dt.datetime(2030, 3, 1, 17, tzinfo=dt.UTC),
        external_system="jira" if external_id else None,
        external_id=external_id,
    )


def accept(commitment: Commitment, assignee) -> None:
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)


def complete(commitment: Commitment, user) -> None:
    services.commitment_complete(actor=Actor.for_user(user), commitment_id=commitment.pk)


@pytest.fixture
def token(assigner) -> str:
    return mint(assigner)


# --- GET /api/v1/commitments/{id} ----------------------------------------------------


def test_the_assigner_reads_a_commitment_with_every_field_and_its_history(
    client, assigner, assignee, token
):
    created = post_json(client, INBOX, inbox_body(), token=token)
    commitment = Commitment.objects.get(pk=created.json()["id"])
    accept(commitment, assignee)
    complete(commitment, assignee)
    commitment.refresh_from_db()

    response = get(client, one(commitment.pk), token)

    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == set(CommitmentDetailSerializer().fields)
    assert body == {
        "id": str(commitment.pk),
        "status": "Completed",
        "description": "Ship the quarterly report",
        "deadline": "2030-03-01T17:00:00Z",
        "externalSystem": "jira",
        "externalId": "OPS-42",
        "assignerEmail": "lead@example.com",
        "assigneeEmail": "knight@example.com",
        "createdAt": commitment.created_at.isoformat().replace("+00:00", "Z"),
        "updatedAt": commitment.updated_at.isoformat().replace("+00:00", "Z"),
        "link": None,
        "history": body["history"],
    }
    history = body["history"]
    assert [set(entry) for entry in history] == [set(HistoryEntrySerializer().fields)] * 3
    assert [(e["previousStatus"], e["status"], e["actorKind"]) for e in history] == [
        (None, "Pending_Handshake", "api_token"),  # the inbox, through the token
        ("Pending_Handshake", "Active", "user"),
        ("Active", "Completed", "user"),
    ]
    moments = [dt.datetime.fromisoformat(e["at"]) for e in history]
    assert moments == sorted(moments)


def test_a_row_the_inbox_made_was_created_and_last_changed_at_one_instant(client, assignee, token):
    """A new row's createdAt and updatedAt are one reading of the clock (they
    were two: updatedAt came out about a millisecond before createdAt)."""
    created = post_json(client, INBOX, inbox_body(), token=token)
    assert created.status_code == 201, created.content

    body = get(client, one(created.json()["id"]), token).json()

    assert body["updatedAt"] == body["createdAt"]
    # To the microsecond, as stored.
    assert dt.datetime.fromisoformat(body["createdAt"]).microsecond == (
        Commitment.objects.get(pk=created.json()["id"]).created_at.microsecond
    )


def test_the_assignee_reads_it_too_and_a_sync_reads_as_api_token(client, assigner, assignee, token):
    commitment = pending(assigner, assignee)
    accept(commitment, assignee)
    synced = post_json(
        client,
        "/api/v1/sync",
        {"externalSystem": "jira", "externalId": "OPS-42", "status": "Completed"},
        token=token,
    )
    assert synced.status_code == 200

    response = get(client, one(commitment.pk), mint(assignee))

    assert response.status_code == 200
    kinds = [(e["status"], e["actorKind"]) for e in response.json()["history"]]
    assert kinds == [
        ("Pending_Handshake", "user"),
        ("Active", "user"),
        ("Completed", "api_token"),
    ]


def test_a_tracker_connection_reads_as_api_token_as_in_the_webhooks(assigner, assignee):
    from commitments.selectors import commitment_history, public_actor_kind

    tracker = Actor.for_tracker(
        user=assigner, connection_id=uuid.uuid4(), label="GitHub connection “acme”"
    )
    commitment = pending(assigner, assignee, via=tracker)
    assert public_actor_kind("tracker") == "api_token"
    assert [c.actor_kind for c in commitment_history(commitment=commitment)] == ["api_token"]


def test_a_renegotiation_that_keeps_the_status_and_a_draft_edit_are_no_status_changes(
    client, assigner, assignee
):
    lead = Actor.for_user(assigner)
    draft = services.commitment_create_draft(actor=lead, assignee=assignee, description="Draft it")
    services.commitment_update_draft(actor=lead, commitment_id=draft.pk, description="Edited")
    services.commitment_send_for_handshake(actor=lead, commitment_id=draft.pk)
    services.commitment_renegotiate(actor=lead, commitment_id=draft.pk, description="Again")

    response = get(client, one(draft.pk), mint(assigner))

    assert [(e["previousStatus"], e["status"]) for e in response.json()["history"]] == [
        (None, "Draft"),
        ("Draft", "Pending_Handshake"),
    ]


def test_the_link_is_the_readers_template_else_the_assigners_else_the_trackers_url(
    client, assigner, assignee, token
):
    commitment = pending(assigner, assignee, external_id="OPS 7/a")
    assert get(client, one(commitment.pk), token).json()["link"] is None
    links.link_template_add(owner=assigner, system="jira", template=JIRA)
    expected = "https://example.atlassian.net/browse/OPS%207%2Fa"
    assert get(client, one(commitment.pk), token).json()["link"] == expected
    # The assignee has none of their own: the assigner's.
    assert get(client, one(commitment.pk), mint(assignee)).json()["link"] == expected
    links.link_template_add(
        owner=assignee, system="jira", template="https://mine.example/{externalId}"
    )
    assert get(client, one(commitment.pk), mint(assignee, "Mine")).json()["link"] == (
        "https://mine.example/OPS%207%2Fa"
    )
    Commitment.objects.filter(pk=commitment.pk).update(link_url="https://github.com/a/b/issues/7")
    assert get(client, one(commitment.pk), token).json()["link"] == (
        "https://github.com/a/b/issues/7"
    )


def test_an_invited_address_reads_as_the_assignee_email(client, assigner, token):
    asked = services.commitment_ask(
        actor=Actor.for_user(assigner),
        assignee_email="Newcomer@Example.com",
        description="Join us",
        deadline=None,
        send=True,
    )
    body = get(client, one(asked.pk), token).json()
    assert body["assigneeEmail"] == "newcomer@example.com"
    assert (body["externalSystem"], body["externalId"], body["link"]) == (None, None, None)


@pytest.mark.parametrize("who", ["outsider", "unknown", "malformed"])
def test_someone_elses_an_unknown_and_a_malformed_id_are_the_same_404(
    client, assigner, assignee, outsider, who
):
    commitment = pending(assigner, assignee)
    path = {
        "outsider": one(commitment.pk),
        "unknown": one(uuid.uuid4()),
        "malformed": one("not-a-uuid"),
    }[who]
    token = mint(outsider) if who == "outsider" else mint(assigner)
    body = assert_envelope(get(client, path, token), 404, "not_found", details=False)
    assert body["message"] == "No such commitment."
    assert "Ship" not in str(body)


def test_a_draft_is_its_assigners_only(client, assigner, assignee):
    draft = services.commitment_create_draft(
        actor=Actor.for_user(assigner), assignee=assignee, description="Not yet"
    )
    assert get(client, one(draft.pk), mint(assigner)).status_code == 200
    assert_envelope(get(client, one(draft.pk), mint(assignee)), 404, "not_found")
    listed = get(client, LIST, mint(assignee, "Again")).json()["results"]
    assert listed == []


def test_a_read_writes_nothing(client, assigner, assignee, token):
    commitment = pending(assigner, assignee)
    before = rows()
    assert get(client, one(commitment.pk), token).status_code == 200
    assert get(client, LIST, token).status_code == 200
    assert rows() == before


# --- GET /api/v1/commitments ---------------------------------------------------------


@pytest.fixture
def mixed(assigner, assignee, outsider, make_user):
    """The assigner asked the assignee three things (one completed, one
    active, one pending, one without an external reference), was asked one by
    the assignee, and someone else's pair exists. Oldest change first."""
    other = make_user("other@example.com")
    made = {}
    made["done"] = pending(assigner, assignee, external_id="OPS-1")
    accept(made["done"], assignee)
    complete(made["done"], assignee)
    made["active"] = pending(assigner, assignee, external_id="OPS-2")
    accept(made["active"], assignee)
    made["waiting"] = pending(assigner, assignee, external_id="OPS-3")
    made["plain"] = pending(assigner, assignee, external_id=None)
    made["asked_of_me"] = pending(assignee, assigner, external_id="OPS-9")
    made["elsewhere"] = pending(outsider, other, external_id="OPS-2")
    return made


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def names(mixed, *keys) -> list[str]:
    return [str(mixed[key].pk) for key in keys]


def test_the_list_is_both_sides_newest_change_first_and_nobody_elses(client, mixed, token):
    response = get(client, LIST, token)
    assert ids(response) == names(mixed, "asked_of_me", "plain", "waiting", "active", "done")
    assert response.json()["next"] is None
    row = response.json()["results"][0]
    assert set(row) == set(CommitmentSerializer().fields)  # no history in a list
    assert row["assignerEmail"] == "knight@example.com"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"role": "assigner"}, ["plain", "waiting", "active", "done"]),
        ({"role": "assignee"}, ["asked_of_me"]),
        ({"status": "Pending_Handshake"}, ["asked_of_me", "plain", "waiting"]),
        ({"status": "Active"}, ["active"]),
        ({"status": "Completed", "role": "assignee"}, []),
        ({"externalSystem": "jira", "externalId": "OPS-2"}, ["active"]),
        ({"externalSystem": "jira"}, ["asked_of_me", "waiting", "active", "done"]),
        ({"externalId": "OPS-9"}, ["asked_of_me"]),
        ({"externalSystem": "github", "externalId": "OPS-2"}, []),
    ],
)
def test_each_filter_narrows_the_list(client, mixed, token, query, expected):
    assert ids(get(client, LIST, token, data=query)) == names(mixed, *expected)


def test_updated_since_is_inclusive_and_reads_a_plus_sent_unencoded(client, mixed, token):
    active = mixed["active"]
    active.refresh_from_db()
    since = active.updated_at
    expected = names(mixed, "asked_of_me", "plain", "waiting", "active")
    assert ids(get(client, LIST, token, data={"updatedSince": since.isoformat()})) == expected
    # 2030-...+01:00 typed into a URL without encoding the `+` arrives as a space.
    shifted = since.astimezone(dt.timezone(dt.timedelta(hours=1))).isoformat()
    raw = f"{LIST}?updatedSince={shifted}"
    assert "+" in raw
    assert ids(get(client, raw, token)) == expected
    later = (timezone.now() + dt.timedelta(minutes=1)).isoformat()
    assert ids(get(client, LIST, token, data={"updatedSince": later})) == []


def test_pages_follow_next_to_the_end_without_gaps_or_repeats(client, mixed, token):
    seen, url, pages = [], f"{LIST}?limit=2&role=assigner", 0
    while url:
        response = get(client, url, token)
        assert response.status_code == 200, response.content
        page = response.json()
        assert len(page["results"]) <= 2
        seen += [row["id"] for row in page["results"]]
        url = page["next"]
        if url:
            parts = urlsplit(url)
            assert parts.scheme == "http" and parts.netloc == "testserver"
            query = parse_qs(parts.query)
            assert query["limit"] == ["2"] and query["role"] == ["assigner"]
        pages += 1
    assert pages == 2
    assert seen == names(mixed, "plain", "waiting", "active", "done")


def test_a_page_exactly_full_has_no_next_and_one_short_has(client, mixed, token):
    assert get(client, LIST, token, data={"limit": 5}).json()["next"] is None
    page = get(client, LIST, token, data={"limit": 4}).json()
    assert len(page["results"]) == 4 and page["next"]
    last = get(client, page["next"], token).json()
    assert ids_of(last) == names(mixed, "done") and last["next"] is None


def ids_of(page: dict) -> list[str]:
    return [row["id"] for row in page["results"]]


def test_rows_changed_at_the_same_moment_are_paged_by_id(client, assigner, assignee, token):
    made = [pending(assigner, assignee, external_id=f"T-{i}") for i in range(5)]
    moment = timezone.now()
    Commitment.objects.filter(pk__in=[c.pk for c in made]).update(updated_at=moment)
    seen, url = [], f"{LIST}?limit=2"
    while url:
        page = get(client, url, token).json()
        seen += ids_of(page)
        url = page["next"]
    assert seen == sorted((str(c.pk) for c in made), key=lambda s: uuid.UUID(s), reverse=True)


def test_the_default_limit_is_50(client, assigner, assignee, token):
    from tests.harness.commitments import many_commitments

    many_commitments(assigner, assignee, 120)
    page = get(client, LIST, token).json()
    assert len(page["results"]) == 50 and page["next"]
    assert "limit" not in parse_qs(urlsplit(page["next"]).query)
    assert len(get(client, LIST, token, data={"limit": 100}).json()["results"]) == 100


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"role": "boss"}, "role"),
        ({"status": "Done"}, "status"),
        ({"status": ""}, "status"),
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"updatedSince": "yesterday"}, "updatedSince"),
        ({"updatedSince": "2030-01-01"}, "updatedSince"),
        ({"updatedSince": "2030-01-01T10:00:00"}, "updatedSince"),
        ({"externalSystem": "x" * 33}, "externalSystem"),
        ({"externalId": "   "}, "externalId"),
        ({"cursor": "abc"}, "cursor"),
        ({"cursor": "1." + "g" * 32}, "cursor"),
    ],
)
def test_a_bad_filter_is_400_invalid_payload_naming_it(client, mixed, token, query, field):
    body = assert_envelope(
        get(client, LIST, token, data=query), 400, "invalid_payload", details=True
    )
    assert set(body["details"]) == {field}
    assert "Ship" not in str(body)


def test_every_bad_filter_is_named_at_once_and_unknown_ones_are_ignored(client, mixed, token):
    body = get(client, LIST, token, data={"role": "x", "limit": "-1", "color": "red"}).json()
    assert set(body["details"]) == {"role", "limit"}
    assert get(client, LIST, token, data={"color": "red"}).status_code == 200


def test_a_status_of_the_enumeration_is_accepted_whatever_it_holds(client, token, mixed):
    for status in Status:
        assert get(client, LIST, token, data={"status": status.value}).status_code == 200


# --- ETag and 304 --------------------------------------------------------------------


@pytest.mark.parametrize("path", ["list", "one"])
def test_an_etag_answers_304_with_no_body_until_the_answer_changes(
    client, assigner, assignee, token, path
):
    commitment = pending(assigner, assignee)
    url = LIST if path == "list" else one(commitment.pk)
    first = get(client, url, token)
    etag = first["ETag"]
    assert etag.startswith('"') and etag.endswith('"')

    again = get(client, url, token, **{"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert "Content-Type" not in again
    assert again["ETag"] == etag
    for header in (f"W/{etag}", f'"nope", {etag}', "*"):
        assert get(client, url, token, **{"If-None-Match": header}).status_code == 304
    assert get(client, url, token, **{"If-None-Match": '"other"'}).status_code == 200

    accept(commitment, assignee)
    changed = get(client, url, token, **{"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed["ETag"] != etag


def test_the_etag_is_the_readers_own(client, assigner, assignee):
    commitment = pending(assigner, assignee)
    links.link_template_add(owner=assignee, system="jira", template=JIRA)
    mine = get(client, one(commitment.pk), mint(assigner))["ETag"]
    theirs = get(client, one(commitment.pk), mint(assignee))["ETag"]
    assert mine != theirs  # the link differs by reader


# --- query budgets -------------------------------------------------------------------

# docs/api.md, "Query budgets": the token, then one statement for the single
# read (the commitment, its people, the link templates and its audit rows,
# commitments.selectors.commitment_read). The list: the token, one query per
# side (one with `role`), the link templates (only when a row of the page
# has an external reference without a link of its own; the pages asked here
# all hold such rows).
DETAIL_STATEMENTS = 2
LIST_STATEMENTS = 4
LIST_ONE_SIDE_STATEMENTS = 3


@pytest.mark.parametrize("count", [10, 10_000])
def test_the_reads_take_the_same_statements_at_10_and_10000_commitments(
    client, assigner, assignee, token, django_assert_num_queries, count
):
    from tests.harness.api import warm_caches
    from tests.harness.commitments import many_commitments

    many_commitments(assigner, assignee, count)
    links.link_template_add(owner=assigner, system="jira", template=JIRA)
    target = pending(assigner, assignee, external_id="BUDGET-1")
    accept(target, assignee)
    # Every page below holds a row with an external reference (its link is one
    # more statement), whatever `many_commitments` puts in the first pages.
    pending(assignee, assigner, external_id="BUDGET-2")  # asked of the token's owner
    warm_caches()
    assert get(client, LIST, token).status_code == 200  # the token's use of this minute

    with django_assert_num_queries(DETAIL_STATEMENTS):
        response = get(client, one(target.pk), token)
    assert response.status_code == 200 and response.json()["link"]
    with django_assert_num_queries(LIST_STATEMENTS):
        page = get(client, LIST, token, data={"limit": 5}).json()
    assert len(page["results"]) == 5 and page["next"]
    with django_assert_num_queries(LIST_STATEMENTS):
        assert get(client, LIST, token).status_code == 200  # up to 50
    with django_assert_num_queries(LIST_STATEMENTS):
        further = get(client, page["next"], token, data=None)
    assert further.status_code == 200
    for query in ({"role": "assignee", "status": "Pending_Handshake"}, {"role": "assigner"}):
        with django_assert_num_queries(LIST_ONE_SIDE_STATEMENTS):
            assert get(client, LIST, token, data=query).status_code == 200
    with django_assert_num_queries(LIST_STATEMENTS):
        assert get(client, LIST, token, **{"If-None-Match": '"x"'}).status_code == 200


# --- scope, client networks, rate limit ----------------------------------------------


@pytest.mark.parametrize("path", ["list", "one"])
def test_a_token_without_the_read_scope_is_refused_naming_it(client, assigner, assignee, path):
    from integrations import services as token_services
    from integrations.models import ApiToken

    commitment = pending(assigner, assignee)
    writer = token_services.api_token_mint(user=assigner, name="W", scopes=["inbox", "sync"])
    url = LIST if path == "list" else one(commitment.pk)
    body = assert_envelope(get(client, url, writer.plaintext), 403, "forbidden", details=False)
    assert f"lacks the 'read' scope needed for {url}" in body["message"]
    assert "(its scopes: inbox, sync)" in body["message"]
    assert "Ship" not in str(body)
    # Refused for the token itself: not recorded as its use.
    assert ApiToken.objects.get(pk=writer.token.pk).last_used_at is None


def test_a_read_only_token_reads_and_may_not_write(client, assigner, assignee):
    from integrations import services as token_services

    reader = token_services.api_token_mint(user=assigner, name="R", scopes=["read"]).plaintext
    assert get(client, LIST, reader).status_code == 200
    refused = post_json(client, INBOX, inbox_body(), token=reader)
    assert "'inbox' scope" in assert_envelope(refused, 403, "forbidden")["message"]


def test_the_reads_keep_the_tokens_client_networks(client, assigner, assignee):
    from integrations import services as token_services

    commitment = pending(assigner, assignee)
    office = token_services.api_token_mint(
        user=assigner, name="Office", networks=["203.0.113.0/24"]
    ).plaintext
    for url in (LIST, one(commitment.pk)):
        outside = client.get(url, headers={"Authorization": f"Bearer {office}"})  # 127.0.0.1
        body = assert_envelope(outside, 403, "forbidden")
        assert "not accepted from 127.0.0.1" in body["message"]
        inside = client.get(
            url, headers={"Authorization": f"Bearer {office}"}, REMOTE_ADDR="203.0.113.9"
        )
        assert inside.status_code == 200


@pytest.mark.parametrize(
    ("header", "error"),
    [(None, "unauthorized"), ("Bearer svc_nope", "unauthorized"), ("Basic abc", "unauthorized")],
)
def test_no_valid_token_is_401_with_the_challenge(client, header, error):
    headers = {"Authorization": header} if header else {}
    response = client.get(LIST, headers=headers)
    assert_envelope(response, 401, error)
    assert response["WWW-Authenticate"] == "Bearer"


def test_the_reads_have_a_rate_bucket_of_their_own(client, assigner, assignee, token, settings):
    settings.API_RATE_BURST = 2
    settings.API_RATE_PER_MINUTE = 1
    commitment = pending(assigner, assignee)
    assert get(client, LIST, token).status_code == 200
    assert get(client, one(commitment.pk), token, **{"If-None-Match": "*"}).status_code == 304
    spent = get(client, LIST, token)
    assert_envelope(spent, 429, "rate_limited")
    assert int(spent["Retry-After"]) >= 1
    # The writes' bucket is untouched by the reads.
    assert post_json(client, INBOX, inbox_body(externalId="NEW-1"), token=token).status_code == 201


def test_the_single_reads_statement_agrees_with_the_orm_reads(client, assigner, assignee, outsider):
    """commitment_read (one statement, written out) answers as the ORM reads
    of the pages do: visibility, both addresses, the deep link, the history."""
    from commitments import selectors

    lead = Actor.for_user(assigner)
    links.link_template_add(owner=assigner, system="jira", template=JIRA)
    made = [pending(assigner, assignee, external_id=f"AG-{n}") for n in range(3)]
    accept(made[1], assignee)
    complete(made[1], assignee)
    made.append(pending(assigner, assignee, external_id=None))
    made.append(services.commitment_create_draft(actor=lead, assignee=assignee, description="D"))
    made.append(
        services.commitment_ask(
            actor=lead, assignee_email="nobody@example.com", description="I", deadline=None,
            send=True,
        )
    )  # fmt: skip
    Commitment.objects.filter(pk=made[2].pk).update(link_url="https://github.com/a/b/issues/1")
    for reader in (assigner, assignee, outsider):
        for commitment in made:
            read = selectors.commitment_read(user=reader, commitment_id=commitment.pk)
            row = selectors.commitment_get_visible(user=reader, commitment_id=commitment.pk)
            assert (read is None) == (row is None), (reader, commitment)
            if row is None:
                continue
            assert (read.pk, read.status, read.description, read.deadline) == (
                row.pk, row.status, row.description, row.deadline
            )  # fmt: skip
            assert (read.created_at, read.updated_at) == (row.created_at, row.updated_at)
            assert read.assigner_email == row.assigner.email
            expected = row.assignee.email if row.assignee else row.invitation.email
            assert read.assignee_email == expected
            assert read.link == selectors.commitment_deep_link(viewer=reader, commitment=row)
            assert read.history == selectors.commitment_history(commitment=row)
