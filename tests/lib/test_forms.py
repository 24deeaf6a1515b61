"""The pages judge blank text as the API does (lib.forms.TextField, lib.text):
a value of only blank characters (NEL, NBSP, a zero-width space, the byte
order mark, ...) is refused by a page's form exactly when the API refuses it,
and the same characters come off the ends. Before, the forms trimmed with
`str.strip()`: a description of a zero-width space or a BOM was saved as
given, one the API would refuse, and an outbound webhook registered for
"jira" plus a zero-width space never matched the inbox's "jira"."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from audit.services import Actor
from commitments import services
from commitments.models import Commitment, Status
from integrations.serializers import InboxSerializer
from lib.forms import TextField
from tests.harness.api import INBOX, assert_envelope, inbox_body, mint, post_json
from tests.harness.commitments import commitment_in
from tests.harness.webhook_pages import RECEIVER, resolve_every_name_to
from webhooks.forms import EndpointCreateForm
from webhooks.services import webhook_endpoint_create

NEL, NBSP, ZWSP, BOM, IDEOGRAPHIC = "\u0085", "\u00a0", "\u200b", "\ufeff", "\u3000"
# Python's strip() keeps the zero-width space and the BOM; it takes NEL and NBSP.
BLANKS = [NEL, NBSP, ZWSP, BOM, f"{ZWSP} {BOM}", f"{NEL}{IDEOGRAPHIC}\u2060"]
BLANK_IDS = ["NEL", "NBSP", "ZWSP", "BOM", "ZWSP-space-BOM", "NEL-ideographic-word-joiner"]
FRAMED = [
    (f"{NEL}Find a shrubbery{NBSP}", "Find a shrubbery"),
    (f"{ZWSP}Find a shrubbery{BOM}", "Find a shrubbery"),
    (f"{IDEOGRAPHIC} Find a{NBSP}shrubbery \u2060", f"Find a{NBSP}shrubbery"),
]
FRAMED_IDS = ["NEL-NBSP", "ZWSP-BOM", "ideographic-word-joiner"]


def api_description(value: str) -> tuple[bool, str | list]:
    serializer = InboxSerializer(data=inbox_body(description=value))
    if serializer.is_valid():
        return True, serializer.validated_data["description"]
    return False, serializer.errors["description"]


@pytest.mark.parametrize("value", BLANKS, ids=BLANK_IDS)
def test_the_field_refuses_a_blank_value_as_the_api_does(value):
    accepted, errors = api_description(value)
    assert (accepted, errors) == (False, ["This field may not be blank."])
    field = TextField(max_length=2000)
    with pytest.raises(Exception, match="This field is required"):
        field.clean(value)
    assert TextField(required=False).clean(value) == ""


@pytest.mark.parametrize(("value", "trimmed"), FRAMED, ids=FRAMED_IDS)
def test_the_field_trims_what_the_api_trims(value, trimmed):
    assert api_description(value) == (True, trimmed)
    assert TextField(max_length=2000).clean(value) == trimmed


def test_the_length_limit_counts_the_trimmed_value_as_the_api_does():
    value = f"{ZWSP * 5}{'x' * 2000}{BOM * 5}"
    assert api_description(value) == (True, "x" * 2000)
    assert TextField(max_length=2000).clean(value) == "x" * 2000


# --- through the pages --------------------------------------------------------------


@pytest.fixture
def lead(client, assigner):
    client.force_login(assigner)
    return assigner


def ask(client, description: str):
    return client.post(
        "/commitments/new",
        {
            "assignee_email": "knight@example.com",
            "description": description,
            "deadline_choice": "none",
            "submit": "send",
        },
    )


@pytest.mark.django_db
@pytest.mark.parametrize("value", BLANKS, ids=BLANK_IDS)
def test_the_ask_page_refuses_a_blank_description_as_the_api_does(client, lead, assignee, value):
    response = ask(client, value)
    assert response.status_code == 400
    assert response.context["form"].errors.keys() == {"description"}

    api = post_json(client, INBOX, inbox_body(description=value), token=mint(lead))
    body = assert_envelope(api, 400, "invalid_payload", details=True)
    assert body["details"] == {"description": "This field may not be blank."}
    assert not Commitment.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("value", "trimmed"), FRAMED, ids=FRAMED_IDS)
def test_the_ask_page_trims_a_description_as_the_api_does(client, lead, assignee, value, trimmed):
    assert ask(client, value).status_code == 302
    api = post_json(client, INBOX, inbox_body(description=value), token=mint(lead))
    assert api.status_code == 201, api.content
    assert sorted(Commitment.objects.values_list("description", flat=True)) == [trimmed] * 2


@pytest.mark.django_db
@pytest.mark.parametrize("value", [ZWSP, BOM, f"{NEL}{ZWSP}"], ids=["ZWSP", "BOM", "NEL-ZWSP"])
def test_the_terms_page_refuses_a_blank_description(client, assigner, assignee, value):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assigner)
    response = client.post(
        f"/commitments/{c.pk}/terms",
        {"description": value, "deadline": "2030-02-01T09:30", "terms_version": c.terms_version},
    )
    assert response.status_code == 400
    assert response.context["terms_form"].errors.keys() == {"description"}
    c.refresh_from_db()
    assert c.description != value


@pytest.mark.django_db
def test_a_webhook_endpoint_is_for_the_system_the_inbox_would_store(monkeypatch, assigner):
    resolve_every_name_to(monkeypatch)
    form = EndpointCreateForm(
        data={"external_system": f"{ZWSP}jira{BOM}", "url": RECEIVER, "form_key": "k"}
    )
    assert form.is_valid(), form.errors
    assert form.cleaned_data["external_system"] == "jira"
    endpoint, _secret = webhook_endpoint_create(
        user=assigner, external_system=f"jira{ZWSP}", url=RECEIVER
    )
    assert endpoint.external_system == "jira"


@pytest.mark.django_db
def test_a_decline_reason_of_blanks_is_no_reason(assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    services.commitment_decline(
        actor=Actor.for_user(assignee),
        commitment_id=c.pk,
        terms_version=c.terms_version,
        reason=f"{ZWSP}{BOM}",
    )
    row = AuditEvent.objects.for_object(c).order_by("-occurred_at").first()
    assert row.action == "declined"
    assert not (row.payload or {}).get("reason")
