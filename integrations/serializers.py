"""Input and output serializers of the public API. The OpenAPI document is
generated from these same classes, so the contract and the checks cannot drift.

Field names are camelCase as on the wire, so validation `details` carry the
request's own keys.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from rest_framework import serializers

from commitments.models import DESCRIPTION_MAX, EXTERNAL_ID_MAX, EXTERNAL_SYSTEM_MAX, Status
from lib.api_errors import ErrorEnvelopeSerializer  # noqa: F401 (re-exported)
from lib.json_api import StrictCharField

EMAIL_MAX = 254  # RFC 5321's limit on a forward path; the users table holds no longer.

# ISO-8601 extended format with a time of day and an explicit offset (the RFC 3339
# profile, seconds optional). A date alone, a time without an offset ("local"
# to whom?), week dates, ordinal dates and relative phrases are refused.
_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?P<offset>[Zz]|[+-]\d{2}:\d{2})?"
)
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


class StrictEmailField(serializers.EmailField):
    default_error_messages = {"invalid": "Enter a valid e-mail address."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data).lower()


class AbsoluteDateTimeField(serializers.DateTimeField):
    """An absolute moment: ISO-8601 date and time with `Z` or a UTC offset.

    Returned as an aware datetime in UTC. Documented as `format: date-time`.
    """

    default_error_messages = {
        "invalid": (
            "Give an ISO-8601 date and time with a UTC offset, "
            "for example 2025-03-01T17:00:00Z or 2025-03-01T18:00:00+01:00."
        ),
        "date": "A date alone is not enough: give a date and time with a UTC offset.",
        "naive": "Add a UTC offset or Z: a time without one is ambiguous.",
        "out_of_range": "That moment is not a valid date and time.",
    }

    def to_internal_value(self, value: Any) -> dt.datetime:
        if not isinstance(value, str):
            self.fail("invalid")
        if _DATE_ONLY.fullmatch(value):
            self.fail("date")
        match = _DATETIME.fullmatch(value)
        if match is None:
            self.fail("invalid")
        if match["offset"] is None:
            self.fail("naive")
        try:
            return dt.datetime.fromisoformat(value.upper()).astimezone(dt.UTC)
        except (ValueError, OverflowError):
            self.fail("out_of_range")


def _email(help_text: str) -> StrictEmailField:
    return StrictEmailField(max_length=EMAIL_MAX, help_text=help_text)


def _external_system() -> StrictCharField:
    return StrictCharField(
        min_length=1,
        max_length=EXTERNAL_SYSTEM_MAX,
        help_text=(
            "Source slug, by convention lowercase without spaces (e.g. `jira`). "
            f"Trimmed; 1..{EXTERNAL_SYSTEM_MAX} characters."
        ),
    )


def _external_id() -> StrictCharField:
    return StrictCharField(
        min_length=1,
        max_length=EXTERNAL_ID_MAX,
        help_text=(
            f"Identifier within the external system. Trimmed; 1..{EXTERNAL_ID_MAX} characters."
        ),
    )


# --- POST /api/v1/inbox ----------------------------------------------------------


class InboxSerializer(serializers.Serializer):
    assignerEmail = _email(
        "Must be the token owner's address (case-insensitive); otherwise `403 forbidden`."
    )
    assigneeEmail = _email(
        "Must be the address of an existing user (case-insensitive); otherwise "
        "`400 invalid_payload` with `details.assigneeEmail`."
    )
    description = StrictCharField(
        min_length=1,
        max_length=DESCRIPTION_MAX,
        help_text=f"What is committed to. Trimmed; 1..{DESCRIPTION_MAX} characters.",
    )
    deadline = AbsoluteDateTimeField(
        allow_null=True,
        help_text=(
            "Required key; null means no deadline. An ISO-8601 date and time with `Z` or a "
            "UTC offset. Dates without a time, times without an offset and relative phrases "
            '("tomorrow") are refused.'
        ),
    )
    externalSystem = _external_system()
    externalId = _external_id()


class InboxCreatedSerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="The new commitment's id.")


# --- POST /api/v1/sync -----------------------------------------------------------


class SyncSerializer(serializers.Serializer):
    externalSystem = _external_system()
    externalId = _external_id()
    status = serializers.ChoiceField(
        choices=[Status.COMPLETED.value],
        help_text=(
            "The status to move to. `Completed` is the only one an external system may drive; "
            "accepting and declining are the assignee's own acts."
        ),
    )


class SyncResultSerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="The commitment's id (as returned by the inbox).")
    status = serializers.ChoiceField(choices=Status.choices, help_text="Status after the call.")
    previousStatus = serializers.ChoiceField(
        choices=Status.choices, help_text="Status before the call."
    )
    changed = serializers.BooleanField(
        help_text="False when the commitment already had the requested status (a replay)."
    )


# --- errors ------------------------------------------------------------------------
