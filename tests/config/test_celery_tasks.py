"""Settings name tasks by string (routes and beat; config is the top layer):
every such name must be a task the worker registers, or a route or a beat
entry would silently point at nothing after a rename."""

from __future__ import annotations

from django.conf import settings

from config.celery import app


def registered() -> set[str]:
    app.loader.import_default_modules()  # autodiscovers each app's tasks.py
    return {name for name in app.tasks if not name.startswith("celery.")}


def test_every_routed_task_is_registered():
    assert settings.CELERY_TASK_ROUTES
    assert set(settings.CELERY_TASK_ROUTES) <= registered()


def test_every_scheduled_task_is_registered():
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert scheduled == {"relay.tasks.sweep", "notifications.tasks.remind"}
    assert scheduled <= registered()


def test_each_app_registers_its_own_tasks():
    assert registered() == {
        "relay.tasks.dispatch_event",
        "relay.tasks.dispatch_events",
        "relay.tasks.sweep",
        "notifications.tasks.deliver_nudge",
        "notifications.tasks.deliver_nudges",
        "notifications.tasks.send_test_nudge",
        # The same task by its name before 0010 (messages queued before a deploy).
        "notifications.tasks.send_channel_test",
        "notifications.tasks.remind",
        "webhooks.tasks.deliver_webhook",
        "webhooks.tasks.deliver_webhooks",
    }
