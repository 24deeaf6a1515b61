"""The audit admin's search reads a term by what it looks like, each kind
through an index (benchmarks/scale.py: the admin's icontains search read all
five million rows): a whole e-mail address finds that person's events, a
token's prefix that token's, other text token names and addresses among the
newest events only; and the capped count says "or more"."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit import admin as audit_admin
from audit.models import AuditAction, AuditEvent
from audit.services import Actor, audit_event_record
from integrations import tokens
from lib.admin import CappedCountPaginator
from tests.harness.plans import indexes_used, plan_nodes, plan_of

pytestmark = pytest.mark.django_db

LIST = "/admin/audit/auditevent/"
TOKEN_ID = uuid.UUID("00000000-0000-4000-8000-000000000042")
PREFIX = "svc_Ab3dE6gH"


@pytest.fixture
def trail(assigner, assignee, outsider):
    """The assigner acts by hand and through a token; the assignee and the
    outsider by hand; the system once."""
    record = audit_event_record
    record(actor=Actor.for_user(assigner), subject=assigner, action=AuditAction.CREATED)
    by_token = Actor.for_token(
        user=assigner, token_id=TOKEN_ID, token_prefix=PREFIX, token_name="Jira sync"
    )
    record(actor=by_token, subject=assigner, action=AuditAction.SENT_FOR_HANDSHAKE)
    record(actor=Actor.for_user(assignee), subject=assignee, action=AuditAction.ACCEPTED)
    record(actor=Actor.for_user(outsider), subject=outsider, action=AuditAction.COMMENTED)
    record(actor=Actor.system(), subject=outsider, action=AuditAction.ASSIGNEE_JOINED)


def found(staff_client, term: str) -> list[str]:
    """The actions listed for a search, less the staff user's own sign-in."""
    response = staff_client.get(LIST, {"q": term})
    assert response.status_code == 200
    return sorted(
        e.action for e in response.context["cl"].result_list if e.action != "user_signed_in"
    )


def audit_queries(staff_client, params: dict[str, str]) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        assert staff_client.get(LIST, params).status_code == 200
    return [q["sql"] for q in queries if "audit_auditevent" in q["sql"]]


def test_an_address_finds_that_persons_events_their_tokens_included(staff_client, trail):
    assert found(staff_client, "lead@example.com") == ["created", "sent_for_handshake"]
    assert found(staff_client, "knight@example.com") == ["accepted"]


def test_an_address_is_matched_in_any_case_and_whole(staff_client, trail):
    assert found(staff_client, "  KNIGHT@Example.COM ") == ["accepted"]
    # A part of an address that still reads as one is nobody's.
    assert found(staff_client, "knight@example") == []
    assert found(staff_client, "nobody@example.com") == []


def test_an_address_is_looked_up_through_the_users_lowered_address(staff_client, trail):
    plain = audit_queries(staff_client, {})
    searched = audit_queries(staff_client, {"q": "KNIGHT@example.com"})

    assert len(searched) == len(plain)
    assert searched and all("LIKE" not in sql.upper() for sql in searched)
    assert all("LOWER(U0.\"email\") = 'knight@example.com'" in sql for sql in searched)


def test_a_token_prefix_finds_that_tokens_events_exactly(staff_client, trail):
    assert found(staff_client, PREFIX) == ["sent_for_handshake"]
    # Prefixes are case-sensitive (base62), and one is matched whole.
    assert found(staff_client, PREFIX.lower()) == []
    assert found(staff_client, "svc_Ab3dE6gX") == []

    searched = audit_queries(staff_client, {"q": PREFIX})
    assert searched and all("LIKE" not in sql.upper() for sql in searched)


def test_the_prefix_shape_is_the_tokens_display_prefix():
    for _ in range(20):
        plaintext = tokens.generate()
        assert audit_admin.TOKEN_PREFIX_SHAPE.fullmatch(tokens.display_prefix(plaintext))
        assert not audit_admin.TOKEN_PREFIX_SHAPE.fullmatch(plaintext)


def test_other_text_finds_token_names_and_parts_of_addresses(staff_client, trail):
    assert found(staff_client, "jira SYNC") == ["sent_for_handshake"]
    assert found(staff_client, "knight@") == ["accepted"]
    assert found(staff_client, "outsider") == ["commented"]
    assert found(staff_client, "svc_Ab3d") == []  # a part of a prefix is no name


def test_other_text_is_looked_for_among_the_newest_events_only(
    staff_client, trail, outsider, monkeypatch
):
    # Newest first: the system's note, the outsider's comment, the knight's
    # acceptance, ... (the staff user's sign-in came before them all).
    monkeypatch.setattr(audit_admin, "RECENT_EVENTS", 2)
    assert found(staff_client, "outsider") == ["commented"]
    assert found(staff_client, "knight") == []
    # The bound follows the filters: among the newest 2 of the user events.
    assert (
        staff_client.get(LIST, {"q": "knight", "actor_kind": "user"}).context["cl"].result_count
        == 1
    )


def test_other_text_costs_one_query_more_than_the_plain_list(staff_client, trail):
    plain = audit_queries(staff_client, {})
    searched = audit_queries(staff_client, {"q": "jira"})

    assert len(searched) == len(plain) + 1
    assert "ORDER BY" in searched[0] and "LIMIT 1 OFFSET 9999" in searched[0]


def test_the_help_text_says_what_a_term_finds(staff_client, trail):
    page = staff_client.get(LIST).content.decode()

    assert "whole e-mail address" in page
    assert "token&#x27;s prefix (svc_ and 8 characters)" in page
    assert "among the newest 10,000 events" in page


def test_a_capped_count_says_or_more(staff_client, trail, monkeypatch):
    monkeypatch.setattr(CappedCountPaginator, "COUNT_CAP", 3)

    page = staff_client.get(LIST).content.decode()
    assert "3 or more audit events" in page

    searched = staff_client.get(LIST, {"q": "outsider"}).content.decode()
    assert "1 result (" in searched and "1 audit event\n" in searched


def test_the_cap_reads_ten_thousand_or_more():
    paginator = CappedCountPaginator(AuditEvent.objects.none(), 100)
    paginator.count = CappedCountPaginator.COUNT_CAP  # as counted at the cap

    assert paginator.count_label == "10,000 or more"


# --- the plans, on PostgreSQL with enough rows for its planner to choose -----

FILL = """
INSERT INTO audit_auditevent (id, occurred_at, actor_kind, token_id, token_prefix, subject_id,
                              action, payload, subject_type_id, user_id, token_name)
SELECT md5('t' || i)::uuid, now() - interval '60 days' + i * interval '1 minute',
       CASE WHEN i %% 10 = 0 THEN 'api_token' ELSE 'user' END,
       CASE WHEN i %% 10 = 0 THEN md5('k' || (i %% 50))::uuid END,
       CASE WHEN i %% 10 = 0 THEN 'svc_' || substr(md5('k' || (i %% 50)), 1, 8) ELSE '' END,
       md5('s' || i)::uuid, 'commented', '{}', %(subject_type)s,
       CASE WHEN i %% 7 > 0 THEN md5('p' || (i %% 1000))::uuid END,
       CASE WHEN i %% 10 = 0 THEN 'token ' || (i %% 50) ELSE '' END
FROM generate_series(1, %(rows)s) i
"""
PEOPLE = """
INSERT INTO accounts_user (id, email, password, is_superuser, is_staff, is_active, date_joined,
                           display_name, timezone)
SELECT md5('p' || i)::uuid, 'person-' || i || '@example.com', '', false, false, true, now(), '',
       'UTC'
FROM generate_series(0, 999) i
"""


def seq_scans_of_the_trail(plan: dict) -> list[str]:
    return [
        node.get("Filter", "")
        for node in plan_nodes(plan)
        if node.get("Node Type") == "Seq Scan" and node.get("Relation Name") == "audit_auditevent"
    ]


@pytest.mark.postgres
def test_each_kind_of_term_is_read_off_an_index(staff_client, make_user, monkeypatch):
    """60,000 events among 1,000 people and the system, every tenth by one
    of 50 tokens: PostgreSQL's planner then takes the indexes the search is
    written for, as it did at five million rows."""
    target = make_user("target@example.com")  # a sign-in's subject
    audit_event_record(actor=Actor.for_user(target), subject=target, action=AuditAction.CREATED)
    subject_type = AuditEvent.objects.get(action="created").subject_type_id
    with connection.cursor() as cursor:
        cursor.execute(PEOPLE)
        cursor.execute(FILL, {"subject_type": subject_type, "rows": 60_000})
        cursor.execute("ANALYZE audit_auditevent")
        cursor.execute("SELECT 'svc_' || substr(md5('k7'), 1, 8)")
        (prefix,) = cursor.fetchone()
    # The newest 10,000 of 60,000 are a sixth of the table, where a scan is
    # right; at scale they are a five-hundredth. The count's cap likewise.
    monkeypatch.setattr(audit_admin, "RECENT_EVENTS", 500)
    monkeypatch.setattr(CappedCountPaginator, "COUNT_CAP", 500)

    expected = {
        "PERSON-7@example.com": {"audit_user_time_idx", "user_email_ci_unique"},
        prefix: {"audit_token_prefix_time_idx"},
        "token 7": {"audit_auditevent_occurred_at_1f007848"},
    }
    for term, indexes in expected.items():
        statements = audit_queries(staff_client, {"q": term})
        used: set[str] = set()
        for sql in statements:
            plan = plan_of(sql)
            assert seq_scans_of_the_trail(plan) == [], (term, sql)
            used |= indexes_used(plan)
        assert indexes <= used, (term, used)
