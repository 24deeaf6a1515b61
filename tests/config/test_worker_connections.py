"""A task a worker runs leaves its thread's database connection as a request
does: kept for the next task, closed only when unusable or older than
CONN_MAX_AGE. Celery's Django fixup closed it before and after every task:
each task connected anew (about 25 new PostgreSQL sessions a second while
the worker drained a backlog) and prepared its statements again. The hooks
are called as a worker calls them: the fixup's, and the signals' receivers."""

from __future__ import annotations

import time

import pytest
from celery import signals
from celery.fixups.django import DjangoWorkerFixup
from django.db import connection

from config.celery import app

pytestmark = pytest.mark.django_db(transaction=True)


def the_task():
    app.loader.import_default_modules()  # autodiscovers each app's tasks.py
    return app.tasks["relay.tasks.sweep"]


def a_task_runs(fixup: DjangoWorkerFixup) -> None:
    task = the_task()
    fixup.on_task_prerun(sender=task)
    signals.task_prerun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    fixup.on_task_postrun(sender=task)
    signals.task_postrun.send(sender=task, task_id="t", task=task, args=(), kwargs={})


def backend() -> object:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return id(connection.connection)


def test_a_task_keeps_its_thread_s_connection_for_the_next():
    fixup = DjangoWorkerFixup(app)
    first = backend()
    connection.close_at = time.monotonic() + 60  # within CONN_MAX_AGE

    a_task_runs(fixup)
    a_task_runs(fixup)

    assert connection.connection is not None
    assert id(connection.connection) == first


def test_a_task_closes_a_connection_older_than_its_age_as_a_request_does():
    fixup = DjangoWorkerFixup(app)
    backend()
    connection.close_at = time.monotonic() - 1  # past CONN_MAX_AGE

    task = the_task()
    fixup.on_task_postrun(sender=task)
    signals.task_postrun.send(sender=task, task_id="t", task=task, args=(), kwargs={})

    assert connection.connection is None
