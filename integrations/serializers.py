"""Input and output serializers of the public API. The OpenAPI document is
generated from these same classes, so the contract and the checks cannot drift.

Field names are camelCase as on the wire, so validation `details` carry the
request's own keys. The inbox parses the wire format here; the rules of a
commitment's terms are `commitments.terms`, which tracker connections use too.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from commitments import terms
from commitments.models import Status
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
        "naive": terms.NAIVE,
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
            moment = terms.deadline_clean(dt.datetime.fromisoformat(value.upper()))
        except terms.TermsInvalid:
            self.fail("naive")
        except (ValueError, OverflowError):
            self.fail("out_of_range")
        assert moment is not None  # a moment was given, so one is returned
        return moment


class TermField(StrictCharField):
    """A text term of a commitment (`commitments.terms`): the limits are
    declared as DRF's, so the OpenAPI document reads them off the validators
    as before; the check itself is the terms' rule, the one tracker
    connections run. It answers in DRF's words and codes: the contract's
    error details are the same."""

    def __init__(self, rule: terms.TextRule, *, help_text: str) -> None:
        super().__init__(
            min_length=rule.min_length, max_length=rule.max_length, help_text=help_text
        )
        self.rule = rule

    def run_validators(self, value: Any) -> None:
        problems = self.rule.problems(value)
        if problems:
            raise serializers.ValidationError(
                [ErrorDetail(p.message, code=p.code) for p in problems]
            )


def _email(help_text: str) -> StrictEmailField:
    return StrictEmailField(max_length=EMAIL_MAX, help_text=help_text)


def _external_system() -> TermField:
    rule = terms.EXTERNAL_SYSTEM
    return TermField(
        rule,
        help_text=(
            "Source slug, by convention lowercase without spaces (e.g. `jira`). "
            f"Trimmed; {rule.min_length}..{rule.max_length} characters."
        ),
    )


def _external_id() -> TermField:
    rule = terms.EXTERNAL_ID
    return TermField(
        rule,
        help_text=(
            "Identifier within the external system. Trimmed; "
            f"{rule.min_length}..{rule.max_length} characters."
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
    description = TermField(
        terms.DESCRIPTION,
        help_text=(
            "What is committed to. Trimmed; "
            f"{terms.DESCRIPTION.min_length}..{terms.DESCRIPTION.max_length} characters."
        ),
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
