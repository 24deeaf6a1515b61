"""Structured logs: one JSON object a line, with the id of the request (and,
in a worker, of the task) the line was written for.

The request id lives in a context variable: config.middleware.RequestIdMiddleware
sets it for a request, config/celery.py carries it in a task's message headers
and sets it again in the worker while the task runs, so a worker's lines about
the work a request caused carry that request's id.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import uuid
from contextvars import ContextVar

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)
task_var: ContextVar[tuple[str, str] | None] = ContextVar("task", default=None)

# An id a client or a proxy sends is kept when it is short and plain (letters,
# digits and . _ : - only); anything else is replaced, so a log line or a
# response header never carries what a client smuggled into it.
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def sane_request_id(value: str | None) -> str | None:
    if value and _SANE_REQUEST_ID.fullmatch(value):
        return value
    return None


def new_request_id() -> str:
    return uuid.uuid4().hex


def _request_id(record: logging.LogRecord) -> str | None:
    """The record's request id: set on it, the current one, or (Django logs a
    4xx or 5xx answer, django.request, with the request attached, after the
    middleware that set the variable returned) the attached request's."""
    return (
        getattr(record, "request_id", None)
        or request_id_var.get()
        or getattr(getattr(record, "request", None), "request_id", None)
    )


class RequestIdFilter(logging.Filter):
    """Puts the current request id (and task) on every record it passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id(record)
        task = task_var.get()
        if task is not None and getattr(record, "task_id", None) is None:
            record.task_name, record.task_id = task
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC, ISO 8601), level, logger, message,
    request_id when there is one, task and task_id in a worker's task, and the
    traceback as `exc_info` text."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": dt.datetime.fromtimestamp(record.created, tz=dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = _request_id(record)
        if request_id:
            entry["request_id"] = request_id
        task = task_var.get()
        task_id = getattr(record, "task_id", None) or (task[1] if task else None)
        if task_id:
            entry["task_id"] = task_id
            entry["task"] = getattr(record, "task_name", None) or (task[0] if task else None)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exc_info"] = record.exc_text
        if record.stack_info:
            entry["stack_info"] = record.stack_info
        return json.dumps(entry, ensure_ascii=False, default=str)
