"""The capture page (/capture/), browser-free: gather with the fake provider
through POST /api/gather as the page's script does, save the chosen drafts
with the page's form, send one from the dashboard's Draft column, and find it
in the assignee's Accord."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders

from audit.services import Actor
from commitments import services
from commitments.models import Commitment, Status
from tests.harness.fake_provider import draft
from tests.harness.gather import browser, gather, give_key

pytestmark = pytest.mark.django_db

NOTES = (
    "Launch sync, Monday.\n\n"
    "Knight will book the venue for the launch party by Friday.\n\n"
    "Knight also said he'd draft the press release.\n\n"
    "Somebody should water the plants."
)
VENUE = draft(
    "Book the venue for the launch party",
    "Knight will book the venue for the launch party by Friday.",
    assignee_name="Knight",
    deadline="2030-03-08T17:00:00+00:00",
    deadline_text="by Friday",
)
PRESS = draft(
    "Draft the press release",
    "Knight also said he'd draft the press release.",
    assignee_name="Knight",
    confidence="medium",
)
PLANTS = draft("Water the plants", "Somebody should water the plants.", confidence="low")


def csrf_token(client) -> str:
    cookie = client.cookies.get("csrftoken")
    return cookie.value if cookie else ""


def save_form(client, text: str, drafts: list[dict], *, chosen: set[int], assignee: str) -> dict:
    """The form the page's script lays out for `drafts`, as the user sends it."""
    data = {
        "csrfmiddlewaretoken": csrf_token(client),
        "raw_text": text,
        "drafts-TOTAL_FORMS": str(len(drafts)),
        "drafts-INITIAL_FORMS": "0",
        "drafts-MIN_NUM_FORMS": "0",
        "drafts-MAX_NUM_FORMS": "1000",
    }
    for index, d in enumerate(drafts):
        prefix = f"drafts-{index}-"
        if index in chosen:
            data[prefix + "save"] = "on"
        data[prefix + "description"] = d["description"]
        data[prefix + "assignee_email"] = d["assigneeEmail"] or assignee
        data[prefix + "deadline"] = (d["deadline"] or "")[:16]
        data[prefix + "confidence"] = d["confidence"]
        data[prefix + "source_quote"] = d["sourceQuote"]
        data[prefix + "deadline_text"] = d["deadlineText"] or ""
    return data


def drafts_column(page: str) -> str:
    """The dashboard's drafts to send ("" when there are none: no section)."""
    if 'id="drafts"' not in page:
        return ""
    return page[page.index('id="drafts"') : page.index("What you asked of others")]


def test_the_page_gathers_through_the_api_with_a_script_of_its_own(client, assigner):
    give_key(assigner)
    client.force_login(assigner)

    page = client.get("/capture/").content.decode()

    assert 'data-gather-url="/api/gather"' in page
    assert 'name="csrfmiddlewaretoken"' in page
    assert 'id="gather-button"' in page
    assert '<template id="draft-template">' in page
    assert "Capture is not built yet" not in page
    [script] = re.findall(r'<script src="/static/(js/capture\.js)"', page)
    source = Path(finders.find(script)).read_text()
    assert '"X-CSRFToken": csrf.value' in source
    assert 'credentials: "same-origin"' in source
    assert "setBusy(true)" in source  # progress is visible while the model works
    assert "<script>" not in page and "style=" not in page


def test_the_page_has_a_place_for_a_refusal_that_its_script_fills_with_the_words_as_text(
    client, assigner
):
    give_key(assigner)
    client.force_login(assigner)

    page = client.get("/capture/").content.decode()

    box = re.search(r'<div id="gather-refusal"[^>]*>(.*?)</div>', page, re.S)
    assert box and " hidden" in box.group(0).split(">", 1)[0]  # shown only on a refusal
    assert "The model declined to read your text" in box.group(1)
    assert '<blockquote id="gather-refusal-words"></blockquote>' in box.group(1)
    source = Path(finders.find("js/capture.js")).read_text()
    # The answer's `refusal` is what the box shows, as text (never as markup),
    # and "No commitments found" is not claimed for a text the model did not read.
    assert "var refusal = result.body.refusal;" in source
    assert "showRefusal(refusal, drafts.length);" in source
    assert 'refusalWords.textContent = words || "";' in source
    assert "refusalBox.hidden = !words;" in source
    assert "noDrafts.hidden = drafts.length > 0 || refused;" in source
    assert "innerHTML = words" not in source and "innerHTML = refusal" not in source


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_refusal_reaches_the_page_in_the_models_words_and_nothing_is_saved(
    fake_provider, assigner, provider
):
    give_key(assigner, provider)
    fake_provider.refuse("I can't help with extracting tasks from this <b>text</b>.")
    lead = browser(assigner)

    gathered = gather(lead, {"text": NOTES})

    assert gathered.status_code == 200, gathered.content
    assert gathered.json()["drafts"] == []
    assert gathered.json()["refusal"] == "I can't help with extracting tasks from this <b>text</b>."
    assert Commitment.objects.count() == 0
    assert "Book the venue" not in drafts_column(lead.get("/dashboard/").content.decode())


def test_without_a_key_the_page_points_to_model_keys(client, assigner):
    client.force_login(assigner)

    page = client.get("/capture/").content.decode()

    assert 'href="/settings/model-keys/"' in page


def test_collaborators_are_offered_as_assignees(client, assigner, assignee, outsider):
    services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Earlier",
        deadline=None,
    )
    client.force_login(assigner)

    page = client.get("/capture/").content.decode()

    assert '<option value="knight@example.com">Knight</option>' in page
    assert "outsider@example.com" not in page


def test_gather_save_two_send_one_and_the_assignee_sees_it(fake_provider, assigner, assignee):
    give_key(assigner)
    fake_provider.answer([VENUE, PRESS, PLANTS])
    lead = browser(assigner)

    gathered = gather(lead, {"text": NOTES})
    assert gathered.status_code == 200, gathered.content
    drafts = gathered.json()["drafts"]
    assert [d["description"] for d in drafts] == [
        "Book the venue for the launch party",
        "Draft the press release",
        "Water the plants",
    ]
    assert Commitment.objects.count() == 0  # gathering stores nothing

    # The user keeps the first two, corrects one description, leaves the plants.
    data = save_form(lead, NOTES, drafts, chosen={0, 1}, assignee="knight@example.com")
    data["drafts-1-description"] = "Draft the launch press release"
    saved = lead.post("/capture/", data)

    assert saved.status_code == 302, saved.content
    assert saved["Location"] == "/dashboard/#drafts"
    rows = {c.description: c for c in Commitment.objects.all()}
    assert set(rows) == {"Book the venue for the launch party", "Draft the launch press release"}
    for row in rows.values():
        assert row.status == Status.DRAFT
        assert row.raw_text == NOTES
        assert row.assigner == assigner and row.assignee == assignee
    venue = rows["Book the venue for the launch party"]
    assert venue.deadline.isoformat() == "2030-03-08T17:00:00+00:00"  # assigner's zone: UTC

    dashboard = lead.get("/dashboard/").content.decode()
    column = drafts_column(dashboard)
    assert "Book the venue for the launch party" in column
    assert "Draft the launch press release" in column
    assert f'action="/commitments/{venue.pk}/send"' in column

    knight = browser(assignee)
    assert "Book the venue" not in knight.get("/").content.decode()  # drafts are not asked yet

    sent = lead.post(f"/commitments/{venue.pk}/send", {"csrfmiddlewaretoken": csrf_token(lead)})
    assert sent.status_code == 302
    venue.refresh_from_db()
    assert venue.status == Status.PENDING_HANDSHAKE

    accord = knight.get("/").content.decode()
    assert "Book the venue for the launch party" in accord
    assert "Draft the launch press release" not in accord
    column = drafts_column(lead.get("/dashboard/").content.decode())
    assert "Book the venue for the launch party" not in column
    assert "Draft the launch press release" in column


def test_saving_works_without_the_script_and_keeps_the_users_time_zone(client, make_user):
    lead = make_user("tokyo@example.com", timezone="Asia/Tokyo")
    make_user("knight@example.com")
    client.force_login(lead)
    d = dict(VENUE, deadline="2030-03-08T17:00:00+09:00")

    response = client.post(
        "/capture/",
        save_form(client, NOTES, [d], chosen={0}, assignee="knight@example.com")
        | {"csrfmiddlewaretoken": ""},
    )

    assert response.status_code == 302
    [row] = Commitment.objects.all()
    assert row.deadline.isoformat() == "2030-03-08T08:00:00+00:00"


def test_an_unknown_assignee_saves_nothing_and_shows_the_drafts_again(client, assigner):
    client.force_login(assigner)
    data = save_form(client, NOTES, [VENUE, PRESS], chosen={0, 1}, assignee="nobody@example.com")

    response = client.post("/capture/", data)

    assert response.status_code == 400
    page = response.content.decode()
    assert "No user can receive commitments at this e-mail address." in page
    assert "Book the venue for the launch party" in page  # the drafts are not lost
    assert Commitment.objects.count() == 0


def test_choosing_no_draft_saves_nothing(client, assigner, assignee):
    client.force_login(assigner)
    data = save_form(client, NOTES, [VENUE], chosen=set(), assignee="knight@example.com")

    response = client.post("/capture/", data)

    assert response.status_code == 400
    assert "Choose at least one draft to save." in response.content.decode()
    assert Commitment.objects.count() == 0


def test_a_draft_left_out_is_not_judged(client, assigner, assignee):
    client.force_login(assigner)
    data = save_form(client, NOTES, [VENUE, PLANTS], chosen={0}, assignee="knight@example.com")
    data["drafts-1-assignee_email"] = ""  # nobody named: left out, so no error

    response = client.post("/capture/", data)

    assert response.status_code == 302
    assert Commitment.objects.get().description == "Book the venue for the launch party"


def test_the_draft_column_lists_drafts_only_never_inbox_commitments(client, assigner, assignee):
    services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="From the inbox",
        deadline=None,
        external_system="jira",
        external_id="OPS-7",
    )
    services.commitment_create_draft(
        actor=Actor.for_user(assigner), assignee=assignee, description="A captured draft"
    )
    client.force_login(assigner)

    page = client.get("/dashboard/").content.decode()

    column = drafts_column(page)
    assert "A captured draft" in column
    assert "From the inbox" not in column
    assert "From the inbox" in page  # it is in the list of what was asked
