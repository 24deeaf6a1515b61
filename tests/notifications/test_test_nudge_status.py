"""Settings, Notifications: "Send a test" shows its result when it arrives
(issue 15, point 10). The page marks a test under way with a status URL;
its script (static/js/test_nudge.js) polls that URL, which answers
JSON by the session, for the person's own tests only. Without JavaScript
the page says to reload, and the reload shows the same result."""

from __future__ import annotations

import uuid

import pytest
from django.core import mail
from django.urls import reverse

from notifications.models import ChannelKind, TestNudge
from notifications.services import notification_channel_set
from tests.harness.services import FakeService, Reply

PAGE = "/settings/notifications/"
TEST = "/settings/notifications/test"

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    settings.NOTIFY_HTTP_TIMEOUT = 2
    mail.outbox = []


@pytest.fixture
def knight(client, assignee):
    client.force_login(assignee)
    return client


def run_worker(queued) -> None:
    while queued:
        task, arg = queued.pop(0)
        task(arg)


def press_send_a_test(knight, django_capture_on_commit_callbacks) -> TestNudge:
    with django_capture_on_commit_callbacks(execute=True):
        knight.post(TEST)
    return TestNudge.objects.get()


def status_url(test: TestNudge) -> str:
    return reverse("test_nudge_status", args=[test.pk])


def test_a_test_under_way_is_polled_by_the_pages_script_and_the_page_works_without_it(
    knight, queued, django_capture_on_commit_callbacks
):
    test = press_send_a_test(knight, django_capture_on_commit_callbacks)
    html = knight.get(PAGE).content.decode()
    assert f'data-status-url="{status_url(test)}"' in html
    assert "js/test_nudge" in html  # the page's own script
    assert "Waiting for the worker" in html
    # Without JavaScript: the page says what to do.
    assert "<noscript>Reload this page in a moment to see how it went.</noscript>" in html

    answer = knight.get(status_url(test))
    assert answer.status_code == 200
    assert answer["Content-Type"] == "application/json"
    assert answer["Cache-Control"] == "no-store"
    body = answer.json()
    assert (body["id"], body["status"], body["done"]) == (str(test.pk), "pending", False)
    assert "Waiting for the worker" in body["html"]


def test_the_status_says_delivered_once_the_worker_has_sent_it(
    knight, queued, django_capture_on_commit_callbacks
):
    test = press_send_a_test(knight, django_capture_on_commit_callbacks)
    run_worker(queued)
    body = knight.get(status_url(test)).json()
    assert (body["status"], body["done"], body["kind"]) == ("sent", True, "email")
    assert "Accepted" in body["html"]
    assert "E-mail accepted the test message (knight@example.com)." in body["html"]
    # Done: the page reloaded has nothing left to poll.
    assert "data-status-url" not in knight.get(PAGE).content.decode()


def test_the_status_says_failed_with_the_reason(
    knight, assignee, queued, django_capture_on_commit_callbacks
):
    with FakeService(Reply(404, "no_service")) as slack:
        notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
        test = press_send_a_test(knight, django_capture_on_commit_callbacks)
        run_worker(queued)
    body = knight.get(status_url(test)).json()
    assert (body["status"], body["done"]) == ("failed", True)
    assert body["detail"] == "Slack answered 404 no_service"
    assert "Not accepted" in body["html"]
    assert "Slack did not take the test message: Slack answered 404 no_service" in body["html"]


def test_the_status_is_one_query_after_the_session(
    knight, queued, django_capture_on_commit_callbacks, django_assert_num_queries
):
    test = press_send_a_test(knight, django_capture_on_commit_callbacks)
    # The session, the user, the test.
    with django_assert_num_queries(3):
        assert knight.get(status_url(test)).status_code == 200


def test_nobody_sees_someone_elses_test(
    client, outsider, knight, queued, django_capture_on_commit_callbacks
):
    test = press_send_a_test(knight, django_capture_on_commit_callbacks)
    client.force_login(outsider)
    answer = client.get(status_url(test))
    assert answer.status_code == 404
    assert answer.json() == {
        "error": "not_found",
        "message": "No such test of yours.",
        "details": {},
    }
    assert client.get(reverse("test_nudge_status", args=[uuid.uuid4()])).status_code == 404


def test_signed_out_the_status_is_a_json_401(
    client, knight, queued, django_capture_on_commit_callbacks
):
    test = press_send_a_test(knight, django_capture_on_commit_callbacks)
    client.logout()
    answer = client.get(status_url(test))
    assert answer.status_code == 401
    assert answer.json()["error"] == "unauthorized"


def test_the_status_url_only_reads(knight, queued, django_capture_on_commit_callbacks):
    test = press_send_a_test(knight, django_capture_on_commit_callbacks)
    assert knight.post(status_url(test)).status_code == 405
