"""integrations.selectors.users_by_email writes its query out (it runs on
every inbox call); it must answer exactly as the ORM query it replaced, built
on accounts.selectors.verified_primary_email, the one statement of who may
receive: active, the login address primary and verified."""

from __future__ import annotations

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.db.models.functions import Lower

from accounts.selectors import verified_primary_email
from integrations.selectors import users_by_email

pytestmark = pytest.mark.django_db


def reference(emails: list[str]) -> dict[str, tuple[object, bool]]:
    wanted = {email.strip().lower() for email in emails}
    users = (
        get_user_model()
        .objects.alias(email_ci=Lower("email"))
        .filter(email_ci__in=wanted)
        # The stubs' plugin refuses an annotation named as an attribute the
        # model declares for the type checker (User.email_verified, which
        # users_by_email's raw query sets): the same value, by the ORM.
        .annotate(email_verified=verified_primary_email())  # type: ignore[no-redef]
    )
    return {u.email.lower(): (u.pk, u.is_active and u.email_verified) for u in users}


@pytest.fixture
def people(make_user):
    make_user("verified@example.com")
    make_user("unverified@example.com", verified=False)
    inactive = make_user("inactive@example.com")
    inactive.is_active = False
    inactive.save(update_fields=["is_active"])
    # Verified, but another address is the primary one.
    moved = make_user("moved@example.com")
    EmailAddress.objects.filter(user=moved).update(primary=False)
    EmailAddress.objects.create(user=moved, email="other@example.com", primary=True, verified=True)
    # The verified primary address differs from the login address only in case.
    cased = make_user("cased@example.com")
    EmailAddress.objects.filter(user=cased).update(email="Cased@Example.com")
    # A primary row for an address that is not the login address at all.
    stray = make_user("stray@example.com", verified=False)
    EmailAddress.objects.filter(user=stray).delete()
    EmailAddress.objects.create(
        user=stray, email="elsewhere@example.com", primary=True, verified=True
    )


@pytest.mark.parametrize(
    "emails",
    [
        ["verified@example.com", "unverified@example.com"],
        ["VERIFIED@example.com"],
        [" inactive@example.com ", "moved@example.com"],
        ["cased@example.com", "stray@example.com", "nobody@example.com"],
        ["verified@example.com", "Verified@Example.com"],
        ["nobody@example.com"],
        [],
    ],
)
def test_answers_as_the_orm_query(people, emails):
    found = users_by_email(emails=emails)
    assert {email: (u.pk, u.can_receive) for email, u in found.items()} == reference(emails)


def test_who_can_receive(people):
    found = users_by_email(
        emails=[
            "verified@example.com",
            "unverified@example.com",
            "inactive@example.com",
            "moved@example.com",
            "cased@example.com",
            "stray@example.com",
        ]
    )
    assert {email: u.can_receive for email, u in found.items()} == {
        "verified@example.com": True,
        "unverified@example.com": False,
        "inactive@example.com": False,
        "moved@example.com": False,
        "cased@example.com": True,
        "stray@example.com": False,
    }
