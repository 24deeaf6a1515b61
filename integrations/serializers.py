"""Input and output serializers of the public API. The OpenAPI document is
generated from these same classes, so the contract and the checks cannot drift.

Field names are camelCase as on the wire, so validation `details` carry the
request's own keys. The inbox parses the wire format here; the rules of a
commitment's terms are `commitments.terms`, which tracker connections use too.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Iterable
from typing import Any

from django.core.validators import RegexValidator
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from commitments import terms
from commitments.models import Status
from commitments.selectors import READ_ROLES, CommitmentRead, StatusChange
from lib.api_errors import ErrorEnvelopeSerializer  # noqa: F401 (re-exported)
from lib.json_api import ShallowFields, StrictCharField

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


class InboxSerializer(ShallowFields):
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


class SyncSerializer(ShallowFields):
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


def inbox_created_body(commitment_id: uuid.UUID) -> dict[str, Any]:
    """What the inbox answers (`InboxCreatedSerializer`), as a plain dict: a
    serializer made for each call cost more than the body (docs/benchmarks.md)."""
    return {"id": str(commitment_id)}


def sync_result_body(
    *, commitment_id: uuid.UUID, status: str, previous_status: str, changed: bool
) -> dict[str, Any]:
    """What a sync answers (`SyncResultSerializer`), as a plain dict (above)."""
    return {
        "id": str(commitment_id),
        "status": str(status),
        "previousStatus": str(previous_status),
        "changed": bool(changed),
    }


# --- errors ------------------------------------------------------------------------


# --- GET /api/v1/commitments and /api/v1/commitments/{id} --------------------------
#
# The serializers below declare what the read routes answer, and the OpenAPI
# document is generated from them. The bodies themselves are built by
# `commitment_body` and `history_body` (a plain dict per row: a 50-row page
# through DRF's field machinery cost more than everything else of the call,
# docs/benchmarks.md); tests/integrations/test_read_api.py holds each body's
# keys to its serializer's fields, and schemathesis every answer to the schema.

# The contract's actor kinds (commitments.selectors.public_actor_kind).
ACTOR_KINDS = ("user", "api_token", "system")
LIMIT_DEFAULT = 50
LIMIT_MAX = 100
# A page's position: microseconds since the epoch of the last row's
# updatedAt, a dot, its id in 32 hex digits. Opaque to clients (they pass
# `next` as given); the pattern says which strings are cursors at all, and
# every string it matches is one (16 digits stay within year 2286).
CURSOR_PATTERN = r"^[0-9]{1,16}\.[0-9a-f]{32}$"


class HistoryEntrySerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Status.choices, help_text="The status reached.")
    previousStatus = serializers.ChoiceField(
        choices=Status.choices,
        allow_null=True,
        help_text="The status left; null for the creation.",
    )
    at = serializers.DateTimeField(help_text="When (ISO-8601, UTC).")
    actorKind = serializers.ChoiceField(
        choices=ACTOR_KINDS,
        help_text=(
            "Who made the change: a person (`user`), an API token or a tracker connection "
            "acting for its owner (`api_token`), or the service itself (`system`)."
        ),
    )


class CommitmentSerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="The commitment's id (as returned by the inbox).")
    status = serializers.ChoiceField(choices=Status.choices, help_text="The current status.")
    description = serializers.CharField(help_text="What is committed to.")
    deadline = serializers.DateTimeField(
        allow_null=True, help_text="The deadline (ISO-8601, UTC), or null for none."
    )
    externalSystem = serializers.CharField(
        allow_null=True,
        help_text="The source system of its external reference; null for commitments made "
        "in the web interface.",
    )
    externalId = serializers.CharField(
        allow_null=True, help_text="Its identifier in that system; null likewise."
    )
    assignerEmail = serializers.EmailField(help_text="The address of who asked.")
    assigneeEmail = serializers.EmailField(
        help_text="The address of who is asked: the assignee's, or, while nobody has an "
        "account for it, the address the request was sent to."
    )
    createdAt = serializers.DateTimeField(help_text="When it was created (ISO-8601, UTC).")
    updatedAt = serializers.DateTimeField(
        help_text="When it last changed (ISO-8601, UTC): the list's order and `updatedSince` "
        "read this."
    )
    link = serializers.URLField(
        allow_null=True,
        help_text="The deep link to its external reference (the tracker's own issue URL, or "
        "the token owner's, else the assigner's, link template for the system), or null.",
    )


class CommitmentDetailSerializer(CommitmentSerializer):
    history = HistoryEntrySerializer(
        many=True,
        help_text="Each status change, oldest first, from its creation: the facts the "
        "commitment's timeline shows.",
    )


class CommitmentPageSerializer(serializers.Serializer):
    results = CommitmentSerializer(many=True, help_text="Newest change first.")
    next = serializers.URLField(
        allow_null=True,
        help_text="The URL of the next page (the same filters and limit), or null on the last.",
    )


class _CursorPattern(RegexValidator):
    def __init__(self) -> None:
        super().__init__(CURSOR_PATTERN)

    def __call__(self, value: Any) -> None:
        return None  # CursorField.to_internal_value judged the text


class CursorField(serializers.CharField):
    """The `cursor` of a page, parsed into its keyset (updated_at, id)."""

    default_error_messages = {"invalid": "Not a cursor: pass the `next` URL of a page as given."}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Declared for the document (drf-spectacular reads the pattern off
        # it); checked in to_internal_value, since validators see the result.
        self.validators.append(_CursorPattern())

    def to_internal_value(self, data: Any) -> Any:
        text = super().to_internal_value(data)
        if not re.fullmatch(CURSOR_PATTERN.strip("^$"), text):
            self.fail("invalid")
        micros, _, hex_id = text.partition(".")
        try:
            at = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=int(micros))
            return at, uuid.UUID(hex=hex_id)
        except (ValueError, OverflowError):
            self.fail("invalid")


def cursor_for(updated_at: dt.datetime, pk: uuid.UUID) -> str:
    micros = (updated_at - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
    return f"{micros}.{pk.hex}"


class QueryDateTimeField(AbsoluteDateTimeField):
    """An absolute moment in a query string, where an unencoded `+` of the
    offset arrives as a space: read back as the `+` it was."""

    def to_internal_value(self, value: Any) -> dt.datetime:
        if isinstance(value, str):
            value = value.replace(" ", "+")
        return super().to_internal_value(value)


class CommitmentListQuerySerializer(serializers.Serializer):
    role = serializers.ChoiceField(
        choices=READ_ROLES,
        required=False,
        help_text="Only those the token owner asked (`assigner`) or was asked (`assignee`). "
        "Default: both.",
    )
    status = serializers.ChoiceField(
        choices=Status.choices, required=False, help_text="Only those in this status."
    )
    externalSystem = TermField(
        terms.EXTERNAL_SYSTEM,
        help_text="Only those with this external system (with `externalId`: that reference).",
    )
    externalId = TermField(terms.EXTERNAL_ID, help_text="Only those with this external id.")
    updatedSince = QueryDateTimeField(
        required=False,
        help_text="Only those changed at or after this moment: an ISO-8601 date and time "
        "with `Z` or a UTC offset (encode `+` as `%2B`).",
    )
    limit = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=LIMIT_MAX,
        default=LIMIT_DEFAULT,
        help_text=f"Rows per page, 1..{LIMIT_MAX}.",
    )
    cursor = CursorField(
        required=False,
        help_text="Where the page starts: taken from the previous page's `next`, never made up.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("externalSystem", "externalId"):
            self.fields[name].required = False


def _iso(moment: dt.datetime | None) -> str | None:
    """As DRF's DateTimeField renders it (UTC, `Z`)."""
    if moment is None:
        return None
    text = moment.astimezone(dt.UTC).isoformat()
    return text.removesuffix("+00:00") + "Z"


def commitment_body(commitment: CommitmentRead) -> dict[str, Any]:
    """A commitment as the read routes answer it (`CommitmentSerializer`)."""
    return {
        "id": str(commitment.pk),
        "status": commitment.status,
        "description": commitment.description,
        "deadline": _iso(commitment.deadline),
        "externalSystem": commitment.external_system,
        "externalId": commitment.external_id,
        "assignerEmail": commitment.assigner_email,
        "assigneeEmail": commitment.assignee_email,
        "createdAt": _iso(commitment.created_at),
        "updatedAt": _iso(commitment.updated_at),
        "link": commitment.link,
    }


def history_body(changes: Iterable[StatusChange]) -> list[dict[str, Any]]:
    """`HistoryEntrySerializer`'s rows."""
    return [
        {
            "status": change.status,
            "previousStatus": change.previous_status,
            "at": _iso(change.at),
            "actorKind": change.actor_kind,
        }
        for change in changes
    ]
