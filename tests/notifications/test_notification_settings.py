"""Settings, Notifications: choose a channel, send a test (queued for a worker,
its outcome shown on the page), see a broken one. And the admin, which never
shows a chat URL in full."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core import mail
from django.db import connection
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from lib import jobs
from notifications.models import ChannelKind, NudgeChannel, TestNudge
from notifications.services import notification_channel_mark_broken, notification_channel_set
from notifications.tasks import send_test_nudge
from tests.harness.services import FakeService, Reply, new_request_nudge

PAGE = "/settings/notifications/"
TEST = "/settings/notifications/test"
SECRET_PATH = "/services/T000/B000/secret"

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    settings.NOTIFY_HTTP_TIMEOUT = 2
    mail.outbox = []


@pytest.fixture
def worker(queued, django_capture_on_commit_callbacks):
    """Runs what was queued, as a worker would: the real Celery task, in this
    process. Returns the tasks' results."""

    def run() -> list:
        results = []
        while queued:
            task, arg = queued.pop(0)
            results.append(task(arg))
        return results

    return run


@pytest.fixture
def test_sent(knight, worker, django_capture_on_commit_callbacks):
    """Press "send a test", let the worker run, and return the page as reloaded."""

    def press() -> str:
        with django_capture_on_commit_callbacks(execute=True):
            knight.post(TEST)
        worker()
        return knight.get(PAGE).content.decode()

    return press


@pytest.fixture
def slack():
    with FakeService() as fake:
        yield fake


@pytest.fixture
def knight(client, assignee):
    client.force_login(assignee)
    return client


def stored_url_column(channel: NudgeChannel) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT chat_url FROM notifications_nudgechannel WHERE id = %s",
            [channel.pk.hex if connection.vendor == "sqlite" else channel.pk],
        )
        return cursor.fetchone()[0]


def test_the_page_needs_a_signed_in_user(client):
    response = client.get(PAGE)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert client.post(TEST).status_code == 302


def test_without_a_choice_nudges_go_to_the_users_email(knight):
    response = knight.get(PAGE)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Nudges go to:" in html
    assert "knight@example.com" in html
    assert 'value="email" required id="id_kind_0" checked' in html


def test_choosing_slack_stores_the_url_encrypted_and_never_shows_it_again(knight, assignee):
    url = "https://hooks.slack.com" + SECRET_PATH
    response = knight.post(PAGE, {"kind": "slack", "chat_url": url})
    assert response.status_code == 302
    channel = NudgeChannel.objects.get(user=assignee)
    assert channel.kind == ChannelKind.SLACK
    assert channel.chat_url == url
    raw = stored_url_column(channel)
    assert "hooks.slack.com" not in raw and SECRET_PATH not in raw
    html = knight.get(PAGE).content.decode()
    assert "https://hooks.slack.com/…" in html
    assert SECRET_PATH not in html


def test_slack_without_a_url_is_refused(knight, assignee):
    response = knight.post(PAGE, {"kind": "slack", "chat_url": ""})
    assert response.status_code == 400
    assert "Paste the chat URL." in response.content.decode()
    assert not NudgeChannel.objects.filter(user=assignee).exists()


def test_an_empty_url_keeps_the_saved_one(knight, assignee):
    url = "https://hooks.slack.com" + SECRET_PATH
    knight.post(PAGE, {"kind": "slack", "chat_url": url})
    assert knight.post(PAGE, {"kind": "slack", "chat_url": ""}).status_code == 302
    assert NudgeChannel.objects.get(user=assignee).chat_url == url


def test_going_back_to_email_forgets_the_chat_url(knight, assignee):
    knight.post(PAGE, {"kind": "teams", "chat_url": "https://example.logic.azure.com/wf/1"})
    knight.post(PAGE, {"kind": "email", "chat_url": ""})
    channel = NudgeChannel.objects.get(user=assignee)
    assert channel.kind == ChannelKind.EMAIL
    assert channel.chat_url == ""


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.slack.com/services/x",
        "https://localhost/services/x",
        "https://127.0.0.1/services/x",
        "https://10.0.0.5/hook",
        "ftp://hooks.slack.com/x",
        "not a url",
    ],
)
def test_production_accepts_only_https_urls_that_are_not_local(knight, assignee, settings, url):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    response = knight.post(PAGE, {"kind": "slack", "chat_url": url})
    assert response.status_code == 400
    assert not NudgeChannel.objects.filter(user=assignee).exists()


def test_a_url_whose_name_leads_inside_is_refused_without_saying_where(
    knight, assignee, settings, monkeypatch, caplog
):
    settings.OUTBOUND_ALLOW_LOOPBACK = False

    def resolves_privately(host, port, *args, **kwargs):
        return [(2, 1, 6, "", ("10.20.30.40", port))]

    monkeypatch.setattr("lib.outbound.socket.getaddrinfo", resolves_privately)
    response = knight.post(
        PAGE, {"kind": "teams", "chat_url": "https://postgres.internal/workflows/1"}
    )

    assert response.status_code == 400
    page = response.content.decode()
    assert "to public internet addresses only" in page
    assert "10.20.30.40" not in page and "private" not in page
    assert not NudgeChannel.objects.filter(user=assignee).exists()
    # The detail is for the operator, in the server's log.
    assert "10.20.30.40" in caplog.text


def test_development_accepts_a_localhost_url(knight, assignee):
    response = knight.post(PAGE, {"kind": "slack", "chat_url": "http://localhost:9000/hook"})
    assert response.status_code == 302


def test_saving_needs_the_csrf_token(assignee):
    client = Client(enforce_csrf_checks=True)
    client.force_login(assignee)
    response = client.post(PAGE, {"kind": "email"})
    assert response.status_code == 403
    assert client.post(TEST).status_code == 403


def test_send_a_test_queues_it_for_the_worker_and_sends_nothing_in_the_request(
    knight, assignee, queued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = knight.post(TEST, follow=True)
    assert mail.outbox == []  # nothing left the machine during the request
    (test,) = TestNudge.objects.filter(user=assignee)
    assert queued == [(send_test_nudge, str(test.pk))]
    html = response.content.decode()
    assert "Test queued. Its result appears below when it arrives." in html
    assert "Waiting for the worker" in html


def test_send_a_test_by_email(test_sent):
    html = test_sent()
    (sent,) = mail.outbox
    assert sent.to == ["knight@example.com"]
    assert "Accepted" in html and "E-mail accepted the test message" in html


def test_a_test_send_is_audited_with_its_kind_and_outcome_and_never_the_url(
    test_sent, assignee, slack
):
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    test_sent()
    (event,) = AuditEvent.objects.filter(action="notification_test_sent")
    assert event.payload == {"kind": "slack", "outcome": "sent"}
    assert event.user_id == assignee.pk
    slack.reply_with(Reply(404, "no_service"))
    NudgeChannel.objects.filter(user=assignee).update(last_test_at=None)
    test_sent()
    outcomes = AuditEvent.objects.filter(action="notification_test_sent").order_by(
        "occurred_at", "id"
    )
    assert [e.payload for e in outcomes] == [
        {"kind": "slack", "outcome": "sent"},
        {"kind": "slack", "outcome": "failed"},
    ]
    for event in AuditEvent.objects.all():
        assert "/services/" not in str(event.payload)


def test_a_test_taken_twice_is_sent_once(
    knight, assignee, queued, django_capture_on_commit_callbacks
):
    from notifications.services import test_nudge_send

    with django_capture_on_commit_callbacks(execute=True):
        knight.post(TEST)
    ((_, test_id),) = queued
    assert test_nudge_send(test_id=test_id) == "sent"
    assert test_nudge_send(test_id=test_id) is None  # a redelivered message
    assert len(mail.outbox) == 1


def test_a_test_the_broker_did_not_take_is_shown_as_failed(
    knight, assignee, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(jobs, "enqueue", lambda *args, **kwargs: False)
    with django_capture_on_commit_callbacks(execute=True):
        knight.post(TEST)
    html = knight.get(PAGE).content.decode()
    assert "The background worker could not be reached" in html


def test_a_second_test_within_the_interval_is_refused_and_sends_nothing(
    knight, test_sent, settings
):
    settings.NOTIFY_TEST_INTERVAL = 60
    test_sent()
    html = knight.post(TEST, follow=True).content.decode()
    assert len(mail.outbox) == 1
    assert TestNudge.objects.count() == 1
    assert "You sent a test a moment ago. Try again in" in html
    wait = int(html.split("Try again in ")[1].split(" s.")[0])
    assert 1 <= wait <= 60


def test_after_the_interval_a_test_goes_again(test_sent, assignee, settings):
    settings.NOTIFY_TEST_INTERVAL = 60
    test_sent()
    NudgeChannel.objects.filter(user=assignee).update(
        last_test_at=timezone.now() - dt.timedelta(seconds=61)
    )
    test_sent()
    assert len(mail.outbox) == 2


def test_the_interval_is_per_person(
    test_sent, assigner, settings, worker, django_capture_on_commit_callbacks
):
    settings.NOTIFY_TEST_INTERVAL = 60
    test_sent()
    other = Client()
    other.force_login(assigner)
    with django_capture_on_commit_callbacks(execute=True):
        other.post(TEST)
    worker()
    assert sorted(m.to[0] for m in mail.outbox) == ["knight@example.com", "lead@example.com"]


def test_a_test_keeps_the_chosen_channel(test_sent, assignee, slack):
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    test_sent()
    channel = NudgeChannel.objects.get(user=assignee)
    assert channel.kind == ChannelKind.SLACK and channel.chat_url == slack.url
    assert channel.last_test_at is not None


def test_send_a_test_to_slack(test_sent, assignee, slack):
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    html = test_sent()
    (request,) = slack.requests
    assert "this is a test" in request.body["text"]
    assert "Slack accepted the test message" in html


def test_a_test_that_slack_refuses_for_good_shows_the_reason_and_marks_the_channel_broken(
    test_sent, assignee, slack
):
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    slack.reply_with(Reply(404, "no_service"))
    html = test_sent()
    assert "Slack did not take the test message: Slack answered 404 no_service" in html
    assert "Broken" in html
    assert NudgeChannel.objects.get(user=assignee).is_broken


def test_a_transient_test_failure_does_not_mark_the_channel_broken(test_sent, assignee, slack):
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    slack.reply_with(Reply(503, "busy"))
    html = test_sent()
    assert "Slack answered 503 busy" in html
    assert not NudgeChannel.objects.get(user=assignee).is_broken


def test_a_broken_channel_is_shown_to_its_owner_with_the_reason(knight, assignee, slack):
    channel = notification_channel_set(user=assignee, kind=ChannelKind.TEAMS, chat_url=slack.url)
    notification_channel_mark_broken(
        channel_id=channel.pk, failed_url=slack.url, reason="Teams answered 404 WorkflowNotFound"
    )
    html = knight.get(PAGE).content.decode()
    assert "Microsoft Teams stopped taking nudges" in html
    assert "Teams answered 404 WorkflowNotFound" in html
    assert "go to your e-mail" in html


def test_someone_else_does_not_see_a_broken_channel_that_is_not_theirs(
    client, assignee, outsider, slack
):
    channel = notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    notification_channel_mark_broken(channel_id=channel.pk, failed_url=slack.url, reason="gone")
    client.force_login(outsider)
    html = client.get(PAGE).content.decode()
    assert "stopped taking nudges" not in html
    assert "outsider@example.com" in html


def test_a_successful_test_clears_the_broken_mark(test_sent, assignee, slack):
    channel = notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    notification_channel_mark_broken(channel_id=channel.pk, failed_url=slack.url, reason="gone")
    test_sent()
    assert not NudgeChannel.objects.get(user=assignee).is_broken


def test_saving_the_channel_again_clears_the_broken_mark(knight, assignee, slack):
    channel = notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    notification_channel_mark_broken(channel_id=channel.pk, failed_url=slack.url, reason="gone")
    knight.post(PAGE, {"kind": "slack", "chat_url": slack.url + "/new"})
    assert not NudgeChannel.objects.get(user=assignee).is_broken


def test_a_failure_of_an_old_url_does_not_break_the_one_saved_since(assignee, slack):
    channel = notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url + "/2")
    assert not notification_channel_mark_broken(
        channel_id=channel.pk, failed_url=slack.url, reason="gone"
    )
    assert not NudgeChannel.objects.get(user=assignee).is_broken


# --- admin -----------------------------------------------------------------------------


def test_the_admin_shows_channels_without_their_url(client, make_user, assignee):
    admin = make_user("admin@example.com", is_staff=True, is_superuser=True)
    channel = notification_channel_set(
        user=assignee, kind=ChannelKind.SLACK, chat_url="https://hooks.slack.com" + SECRET_PATH
    )
    client.force_login(admin)
    for url in (
        "/admin/notifications/nudgechannel/",
        f"/admin/notifications/nudgechannel/{channel.pk}/change/",
    ):
        response = client.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        assert "https://hooks.slack.com/…" in html
        assert SECRET_PATH not in html


def test_the_admin_shows_a_delivery_with_its_attempts_read_only(
    client, make_user, assigner, assignee, settings
):
    from notifications import sending

    admin = make_user("admin@example.com", is_staff=True, is_superuser=True)
    delivery_id = new_request_nudge(assigner, assignee)
    settings.EMAIL_BACKEND = "tests.notifications.test_transports.DownBackend"
    sending.nudge_send(delivery_id=delivery_id)
    client.force_login(admin)
    listing = client.get("/admin/notifications/nudgedelivery/")
    assert listing.status_code == 200
    assert "knight@example.com" in listing.content.decode()
    page = client.get(f"/admin/notifications/nudgedelivery/{delivery_id}/change/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "Failed, will retry" in html  # the attempt, inline
    assert "Connection refused" in html
    assert 'name="_save"' not in html  # read-only
