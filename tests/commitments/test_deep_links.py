"""Deep links (docs/pages.md, "Deep links"): each person's URL template per
externalSystem, set in Settings, turns a commitment's external reference into
a link on its page: the viewer's own template first, then the assigner's."""

from __future__ import annotations

import re

import pytest

from audit.models import AuditEvent
from audit.services import Actor
from commitments import links, services
from commitments.errors import LinkTemplateInvalid
from commitments.links import deep_link, link_template_problem
from commitments.models import Commitment, LinkTemplate

pytestmark = pytest.mark.django_db

JIRA = "https://example.atlassian.net/browse/{externalId}"
PAGE = "/settings/links/"


# --- the rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        JIRA,
        "https://github.com/acme/app/issues/{externalId}",
        "https://tracker.example.com/search?q={externalId}&exact=1",
    ],
)
def test_these_templates_are_accepted(template):
    assert link_template_problem(template) is None


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("", "Enter a URL"),
        ("https://example.atlassian.net/browse/", "{externalId}"),
        ("http://example.atlassian.net/browse/{externalId}", "https://"),
        ("javascript:alert(1)//{externalId}", "https://"),
        ("ftp://example.com/{externalId}", "https://"),
        ("/browse/{externalId}", "https://"),
        ("https:///browse/{externalId}", "needs a host"),
        ("https://{externalId}.example.com/", "after the host"),
        ("https://user:{externalId}@example.com/", "after the host"),
        ("https://example.com/browse/ {externalId}", "no spaces"),
        ("https://example.com/" + "a" * 500 + "{externalId}", "500 characters"),
        ("http://localhost:8080/browse/{externalId}", "local address in development"),
    ],
)
def test_these_templates_are_refused(settings, template, why):
    settings.DEBUG = False
    settings.LOCAL_SITE = False

    problem = link_template_problem(template)

    assert problem is not None and why in problem


@pytest.mark.parametrize(
    "template",
    ["http://localhost:8080/browse/{externalId}", "http://127.0.0.1/{externalId}"],
)
def test_http_to_a_loopback_host_is_accepted_only_in_development(settings, template):
    settings.DEBUG, settings.LOCAL_SITE = True, False
    assert link_template_problem(template) is None
    # The quick start: DEBUG off, but the site is this machine's.
    settings.DEBUG, settings.LOCAL_SITE = False, True
    assert link_template_problem(template) is None
    settings.DEBUG, settings.LOCAL_SITE = False, False
    assert link_template_problem(template) is not None


def test_http_to_any_other_host_is_refused_even_in_debug(settings):
    settings.DEBUG = True
    assert link_template_problem("http://tracker.example.com/{externalId}") is not None


@pytest.mark.parametrize(
    ("external_id", "link"),
    [
        ("OPS-42", "https://example.atlassian.net/browse/OPS-42"),
        ("a/b c", "https://example.atlassian.net/browse/a%2Fb%20c"),
        ("x?y#z&w", "https://example.atlassian.net/browse/x%3Fy%23z%26w"),
        ("../../admin", "https://example.atlassian.net/browse/..%2F..%2Fadmin"),
    ],
)
def test_the_id_is_url_quoted_where_it_goes(external_id, link):
    assert deep_link(JIRA, external_id) == link


# --- the settings page -------------------------------------------------------------------


def test_the_settings_page_links_to_it(client, assigner):
    client.force_login(assigner)

    assert f'href="{PAGE}">Deep links</a>' in client.get("/settings/").content.decode()


def test_it_sends_a_signed_out_visitor_to_sign_in(client):
    response = client.get(PAGE)

    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={PAGE}"


def test_a_person_adds_lists_and_deletes_a_link(client, assigner):
    client.force_login(assigner)

    response = client.post(PAGE, {"system": " jira ", "template": f" {JIRA} "})

    assert response.status_code == 302 and response["Location"] == PAGE
    link = LinkTemplate.objects.get(owner=assigner)
    assert (link.system, link.template) == ("jira", JIRA)
    page = client.get(PAGE).content.decode()
    assert JIRA in page and "now link to it" in page
    added = AuditEvent.objects.get(action="link_template_added")
    assert added.user == assigner and added.payload == {"system": "jira", "template": JIRA}

    response = client.post(f"{PAGE}{link.pk}/delete")

    assert response.status_code == 302
    assert not LinkTemplate.objects.exists()
    assert "Link deleted." in client.get(PAGE).content.decode()
    assert AuditEvent.objects.filter(action="link_template_deleted").count() == 1


def test_a_bad_template_is_shown_with_its_reason_and_nothing_is_stored(client, assigner):
    client.force_login(assigner)

    response = client.post(PAGE, {"system": "jira", "template": "https://example.com/browse/"})

    assert response.status_code == 400
    assert "where the id goes" in response.content.decode()
    assert not LinkTemplate.objects.exists()


def test_one_link_per_system_per_person(client, assigner, assignee):
    links.link_template_add(owner=assigner, system="jira", template=JIRA)
    client.force_login(assigner)

    response = client.post(PAGE, {"system": "jira", "template": JIRA.replace("example", "other")})

    assert response.status_code == 400
    assert "You have a link for “jira” already" in response.content.decode()
    assert LinkTemplate.objects.get().template == JIRA
    # Another person may link the same system their own way.
    links.link_template_add(owner=assignee, system="jira", template=JIRA)
    assert LinkTemplate.objects.count() == 2


def test_nobody_deletes_another_persons_link(client, assigner, outsider):
    mine = "https://lead.example/browse/{externalId}"
    link = links.link_template_add(owner=assigner, system="jira", template=mine)
    client.force_login(outsider)

    response = client.post(f"{PAGE}{link.pk}/delete", follow=True)

    assert "That link was already gone." in response.content.decode()
    assert LinkTemplate.objects.filter(pk=link.pk).exists()
    assert mine not in client.get(PAGE).content.decode()  # nor sees it


def test_the_form_offers_the_systems_of_the_persons_commitments(client, assigner, assignee):
    pending(assigner, assignee, system="linear", external_id="ENG-1")
    client.force_login(assigner)

    page = client.get(f"{PAGE}?system=linear").content.decode()

    assert '<option value="linear">' in page
    assert re.search(r'name="system" value="linear"', page)


def test_deleting_needs_a_post(client, assigner):
    link = links.link_template_add(owner=assigner, system="jira", template=JIRA)
    client.force_login(assigner)

    assert client.get(f"{PAGE}{link.pk}/delete").status_code == 405
    assert LinkTemplate.objects.exists()


def test_the_model_refuses_a_second_link_for_a_system(assigner):
    links.link_template_add(owner=assigner, system="jira", template=JIRA)

    with pytest.raises(LinkTemplateInvalid):
        links.link_template_add(owner=assigner, system="jira", template=JIRA)


# --- the commitment page -----------------------------------------------------------------


def pending(assigner, assignee, *, system="jira", external_id="OPS/42 a") -> Commitment:
    return services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="From the tracker",
        deadline=None,
        external_system=system,
        external_id=external_id,
    )


def reference(client, c: Commitment) -> str:
    page = client.get(f"/commitments/{c.pk}").content.decode()
    return page[page.index("<dt>External reference</dt>") :].split("</dd>", 1)[0]


def test_without_a_template_the_reference_is_text_with_a_way_to_link_it(client, assigner, assignee):
    c = pending(assigner, assignee)
    client.force_login(assignee)

    ref = reference(client, c)

    assert '<span class="mono">jira:OPS/42 a</span>' in ref
    assert 'href="/settings/links/?system=jira"' in ref


def test_the_assigners_template_links_it_for_everyone(client, assigner, assignee):
    links.link_template_add(owner=assigner, system="jira", template=JIRA)
    c = pending(assigner, assignee)

    for person in (assigner, assignee):
        client.force_login(person)
        ref = reference(client, c)
        assert 'href="https://example.atlassian.net/browse/OPS%2F42%20a"' in ref
        assert 'rel="noopener noreferrer"' in ref


def test_the_viewers_own_template_comes_first(client, assigner, assignee):
    links.link_template_add(owner=assigner, system="jira", template=JIRA)
    links.link_template_add(
        owner=assignee, system="jira", template="https://knight.example/jira/{externalId}"
    )
    c = pending(assigner, assignee, external_id="OPS-1")

    client.force_login(assignee)
    assert 'href="https://knight.example/jira/OPS-1"' in reference(client, c)
    client.force_login(assigner)
    assert 'href="https://example.atlassian.net/browse/OPS-1"' in reference(client, c)


def test_a_template_of_another_system_or_a_stranger_is_not_used(
    client, assigner, assignee, outsider
):
    links.link_template_add(owner=assigner, system="linear", template=JIRA)
    links.link_template_add(owner=outsider, system="jira", template=JIRA)
    c = pending(assigner, assignee)
    client.force_login(assignee)

    assert "atlassian" not in reference(client, c)
