"""Asking from the web (/commitments/new): a Draft or a request for the
handshake at once, the deadline in the asker's time zone, a past deadline
confirmed first, and an address without an account invited (the commitment
waits for the account that verifies it)."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from allauth.account.models import EmailAddress
from django.contrib.admin.sites import site as admin_site
from django.core import mail
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import Actor
from commitments import selectors, services
from commitments.errors import AddressNotAskable
from commitments.models import Commitment, EventKind, Invitation, OutboxEvent, Status
from commitments.views.accord import quick_deadline
from tests.harness.commitments import commitment_in
from tests.harness.verification import CODE_PAGE, mailed_code

pytestmark = pytest.mark.django_db

NEW = "/commitments/new"
PARIS = zoneinfo.ZoneInfo("Europe/Paris")


def ask(client, **fields):
    data = {
        "assignee_email": "knight@example.com",
        "description": "Find a shrubbery",
        "deadline_choice": "none",
        "submit": "send",
    }
    data.update(fields)
    return client.post(NEW, data)


@pytest.fixture
def lead(client, assigner):
    client.force_login(assigner)
    return assigner


# --- the page --------------------------------------------------------------------


def test_every_page_links_to_the_form(client, lead):
    for path in ("/", "/dashboard/", "/settings/"):
        assert 'href="/commitments/new"' in client.get(path).content.decode()


def test_it_sends_a_signed_out_visitor_to_sign_in(client):
    response = client.get(NEW)

    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={NEW}"


def test_it_suggests_the_people_one_has_worked_with(client, lead, assignee, make_user):
    commitment_in(Status.ACTIVE, lead, assignee)
    make_user("stranger@example.com")

    page = client.get(NEW).content.decode()

    assert '<datalist id="collaborators">' in page
    assert '<option value="knight@example.com">Knight</option>' in page
    assert "stranger@example.com" not in page
    assert 'list="collaborators"' in page


def test_the_deadline_choices_work_without_a_script(client, lead):
    page = client.get(NEW).content.decode()

    for value in ("none", "today", "week", "custom"):
        assert f'type="radio" name="deadline_choice" value="{value}"' in page
    assert 'type="datetime-local" name="deadline"' in page
    assert "<script" not in page.split("<main", 1)[1]


# --- asking someone with an account ------------------------------------------------


def test_send_asks_for_the_handshake_at_once(client, lead, assignee):
    response = ask(client)

    c = Commitment.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/commitments/{c.pk}"
    assert (c.status, c.assigner, c.assignee, c.description) == (
        Status.PENDING_HANDSHAKE,
        lead,
        assignee,
        "Find a shrubbery",
    )
    assert c.deadline is None
    assert list(OutboxEvent.objects.values_list("kind", flat=True)) == [
        EventKind.HANDSHAKE_REQUESTED
    ]
    assert AuditEvent.objects.for_object(c).get().action == "created"


def test_save_as_draft_asks_nobody(client, lead, assignee):
    ask(client, submit="draft")

    c = Commitment.objects.get()
    assert c.status == Status.DRAFT and c.assignee == assignee
    assert not OutboxEvent.objects.exists()


def test_a_custom_deadline_is_read_in_the_askers_time_zone(client, lead, assignee):
    lead.timezone = "Europe/Paris"
    lead.save()

    ask(client, deadline_choice="custom", deadline="2031-03-04T09:30")

    assert Commitment.objects.get().deadline == dt.datetime(2031, 3, 4, 9, 30, tzinfo=PARIS)


def test_a_date_typed_in_counts_even_if_the_choice_was_left_alone(client, lead, assignee):
    ask(client, deadline_choice="none", deadline="2031-03-04T09:30")

    assert Commitment.objects.get().deadline == dt.datetime(2031, 3, 4, 9, 30, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("today", dt.datetime(2031, 3, 5, 23, 59, tzinfo=PARIS)),  # a Wednesday
        ("week", dt.datetime(2031, 3, 9, 23, 59, tzinfo=PARIS)),  # its Sunday
        ("none", None),
    ],
)
def test_quick_picks_are_moments_in_the_viewers_zone(choice, expected):
    now = dt.datetime(2031, 3, 5, 10, 0, tzinfo=PARIS)
    with timezone.override(PARIS):
        assert quick_deadline(choice, now=now) == expected


def test_today_from_the_form_is_the_end_of_the_askers_day(client, lead, assignee):
    lead.timezone = "Asia/Tokyo"
    lead.save()

    ask(client, deadline_choice="today")

    local = Commitment.objects.get().deadline.astimezone(zoneinfo.ZoneInfo("Asia/Tokyo"))
    assert (local.date(), local.hour, local.minute) == (
        timezone.now().astimezone(zoneinfo.ZoneInfo("Asia/Tokyo")).date(),
        23,
        59,
    )


def test_a_past_deadline_asks_to_confirm_and_saves_nothing(client, lead, assignee):
    response = ask(client, deadline_choice="custom", deadline="2020-01-01T10:00")

    assert response.status_code == 400
    page = response.content.decode()
    assert "The deadline is already past." in page
    assert 'name="confirm_past"' in page
    assert 'value="2020-01-01T10:00"' in page  # what was typed is kept
    assert not Commitment.objects.exists()


def test_a_confirmed_past_deadline_is_asked(client, lead, assignee):
    response = ask(client, deadline_choice="custom", deadline="2020-01-01T10:00", confirm_past="on")

    assert response.status_code == 302
    assert Commitment.objects.get().deadline == dt.datetime(2020, 1, 1, 10, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"assignee_email": "not an address"}, "assignee_email"),
        ({"description": "   "}, "description"),
        ({"deadline_choice": "custom", "deadline": ""}, "deadline"),
        ({"deadline_choice": "someday"}, "deadline_choice"),
    ],
)
def test_bad_input_is_a_400_with_the_form_and_nothing_saved(client, lead, fields, field):
    response = ask(client, **fields)

    assert response.status_code == 400
    assert 'class="errorlist"' in response.content.decode()
    assert response.context["form"].errors[field]
    assert not Commitment.objects.exists()


# --- asking an address without an account -----------------------------------------------


def test_an_address_without_an_account_is_invited(client, lead):
    response = ask(client, assignee_email="Newcomer@Example.com")

    c = Commitment.objects.get()
    assert response.status_code == 302
    assert c.assignee is None
    assert c.invitation.email == "newcomer@example.com"
    assert c.status == Status.PENDING_HANDSHAKE
    # The outbox row is how commitments says "invite this address".
    assert list(OutboxEvent.objects.values_list("kind", flat=True)) == [EventKind.INVITED]
    page = client.get(response["Location"]).content.decode()
    assert "newcomer@example.com" in page
    assert "no account yet" in page


def test_an_unverified_account_is_invited_too(client, lead, make_user):
    make_user("pending@example.com", verified=False)

    ask(client, assignee_email="pending@example.com")

    c = Commitment.objects.get()
    assert c.assignee is None and c.invitation.email == "pending@example.com"


def test_a_draft_for_an_invited_address_invites_when_sent(client, lead):
    ask(client, assignee_email="newcomer@example.com", submit="draft")
    c = Commitment.objects.get()
    assert not OutboxEvent.objects.exists()

    services.commitment_send_for_handshake(actor=Actor.for_user(lead), commitment_id=c.pk)

    assert list(OutboxEvent.objects.values_list("kind", flat=True)) == [EventKind.INVITED]


def test_a_closed_account_cannot_be_asked(client, lead, make_user):
    make_user("gone@example.com", is_active=False)

    response = ask(client, assignee_email="gone@example.com")

    assert response.status_code == 400
    assert "closed account" in response.content.decode()
    assert not Commitment.objects.exists()


def test_every_ask_to_an_address_without_an_account_counts_toward_the_daily_limit(
    lead, assignee, settings
):
    settings.INVITATIONS_PER_DAY = 2
    actor = Actor.for_user(lead)

    def ask_for(email):
        return services.commitment_ask(
            actor=actor, assignee_email=email, description="Hi", deadline=None, send=True
        )

    ask_for("one@example.com")
    ask_for("one@example.com")  # asked again: counts too
    ask_for("knight@example.com")  # someone with an account: no invitation, not counted

    for email in ("one@example.com", "two@example.com"):
        with pytest.raises(AddressNotAskable, match="without an account 2 times today"):
            ask_for(email)
    assert Invitation.objects.count() == 1
    assert Commitment.objects.count() == 3


def test_the_daily_limit_counts_the_last_24_hours_and_drafts_too(lead, settings):
    settings.INVITATIONS_PER_DAY = 1
    actor = Actor.for_user(lead)
    services.commitment_ask(
        actor=actor, assignee_email="one@example.com", description="Hi", deadline=None, send=False
    )
    with pytest.raises(AddressNotAskable):
        services.commitment_ask(
            actor=actor,
            assignee_email="two@example.com",
            description="Hi",
            deadline=None,
            send=True,
        )

    Commitment.objects.update(created_at=timezone.now() - dt.timedelta(days=1, seconds=1))
    services.commitment_ask(
        actor=actor, assignee_email="two@example.com", description="Hi", deadline=None, send=True
    )
    assert Commitment.objects.count() == 2


def test_one_invitation_row_per_address_whoever_asks(assigner, assignee):
    for person in (assigner, assignee):
        services.commitment_ask(
            actor=Actor.for_user(person),
            assignee_email="newcomer@example.com",
            description="Hi",
            deadline=None,
            send=True,
        )

    assert Invitation.objects.get().commitments.count() == 2


# --- the invited person signs up -------------------------------------------------------


def signup(client, email: str):
    password = "a long enough passphrase"
    return client.post(
        "/accounts/signup/",
        {"email": email, "password1": password, "password2": password, "timezone": "UTC"},
    )


def test_the_commitment_waits_in_the_accord_of_whoever_verifies_the_address(
    client, assigner, settings, django_capture_on_commit_callbacks
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []
    c = services.commitment_ask(
        actor=Actor.for_user(assigner),
        assignee_email="newcomer@example.com",
        description="Water the shrubbery",
        deadline=None,
        send=True,
    )
    signup(client, "newcomer@example.com")
    newcomer = Commitment._meta.get_field("assigner").related_model.objects.get(
        email="newcomer@example.com"
    )
    c.refresh_from_db()
    assert c.assignee is None  # signed up, not verified: nothing attached yet

    with django_capture_on_commit_callbacks(execute=True):
        client.post(CODE_PAGE, {"code": mailed_code(mail.outbox[-1])})

    c.refresh_from_db()
    assert c.assignee == newcomer and c.status == Status.PENDING_HANDSHAKE
    invitation = Invitation.objects.get()
    assert invitation.claimed_by == newcomer and invitation.claimed_at is not None
    assert AuditEvent.objects.for_object(c).filter(action="assignee_joined").exists()
    client.force_login(newcomer)
    page = client.get("/").content.decode()
    assert "Water the shrubbery" in page
    assert f'action="/commitments/{c.pk}/accept"' in page


def test_an_operator_vouching_for_an_address_attaches_too(
    assigner, make_user, django_capture_on_commit_callbacks
):
    c = services.commitment_ask(
        actor=Actor.for_user(assigner),
        assignee_email="newcomer@example.com",
        description="Hi",
        deadline=None,
        send=False,
    )
    with django_capture_on_commit_callbacks(execute=True):
        newcomer = make_user("newcomer@example.com")

    c.refresh_from_db()
    assert c.assignee == newcomer and c.status == Status.DRAFT


def test_an_unverified_or_other_address_attaches_nothing(assigner, make_user):
    c = services.commitment_ask(
        actor=Actor.for_user(assigner),
        assignee_email="newcomer@example.com",
        description="Hi",
        deadline=None,
        send=True,
    )
    pending = make_user("newcomer@example.com", verified=False)
    other = make_user("other@example.com")
    EmailAddress.objects.create(user=other, email="elsewhere@example.com", verified=True)

    assert services.commitment_invitations_claim(user=pending) == 0
    assert services.commitment_invitations_claim(user=other) == 0
    c.refresh_from_db()
    assert c.assignee is None


# --- a commitment nobody has an account for yet breaks nothing ------------------------------


def test_an_invited_commitment_breaks_no_reader(client, assigner, assignee, staff):
    invited = services.commitment_ask(
        actor=Actor.for_user(assigner),
        assignee_email="newcomer@example.com",
        description="Invited one",
        deadline=timezone.now() + dt.timedelta(days=1),
        send=True,
    )
    commitment_in(Status.ACTIVE, assigner, assignee)

    assert [c.email for c in selectors.collaborators_for(user=assigner)] == ["knight@example.com"]
    assert selectors.flow_score(user=assignee) is None
    client.force_login(assigner)
    dashboard = client.get("/dashboard/").content.decode()
    assert "Invited one" in dashboard
    assert "newcomer@example.com" in dashboard  # who was asked, though no account yet
    assert client.get(f"/commitments/{invited.pk}").status_code == 200
    # Renegotiating it does not invite again (tests/notifications/test_invitations.py).
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=invited.pk, description="Changed"
    )
    assert OutboxEvent.objects.filter(commitment=invited).last().kind == EventKind.RENEGOTIATED
    assert admin_site.is_registered(Commitment)
    client.force_login(staff)
    listing = client.get("/admin/commitments/commitment/")
    assert listing.status_code == 200 and "Changed" in listing.content.decode()
    change = client.get(f"/admin/commitments/commitment/{invited.pk}/change/")
    assert change.status_code == 200 and "newcomer@example.com" in change.content.decode()
    invitations = client.get("/admin/commitments/invitation/?q=newcomer")
    assert invitations.status_code == 200 and "newcomer@example.com" in invitations.content.decode()


# --- queries -------------------------------------------------------------------------------


@pytest.mark.parametrize("people", [10, 1000])
def test_the_page_costs_the_same_queries_however_many_collaborators(
    client, lead, make_user, people, django_assert_num_queries, django_user_model
):
    others = django_user_model.objects.bulk_create(
        [django_user_model(email=f"p{n}@example.com") for n in range(people)]
    )
    Commitment.objects.bulk_create(
        [
            Commitment(assigner=lead, assignee=other, description=f"Item {n}")
            for n, other in enumerate(others)
        ]
    )
    client.get(NEW)  # the session settles

    # session, user, collaborators, the navigation's count
    with django_assert_num_queries(4):
        page = client.get(NEW).content.decode()

    assert page.count("<option value=") == people
