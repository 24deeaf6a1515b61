"""A commitment's terms have one check (`commitments.terms`), which the
inbound API's serializer runs and tracker deliveries run too. It answers in
the words and codes DRF's own checks gave, so the contract's error details
stay as they were: each rule is compared here with a plain `StrictCharField`
of the same limits, over the inputs that make each of its errors."""

from __future__ import annotations

import datetime as dt

import pytest
from rest_framework import serializers

from commitments import terms
from integrations.serializers import InboxSerializer, TermField
from lib.json_api import StrictCharField

VALUES = [
    "ok",
    "  padded\t",
    "",
    "   ",
    "\u00a0\u3000",
    "\u200b",
    "x\u200b",
    "x" * 31,
    "x" * 32,
    "x" * 33,
    " " + "x" * 32 + " ",
    "x" * 129,
    "x" * 2001,
    "a\x00b",
    "x" * 40 + "\x00",
    "a\ud800b",
    "\udfff" * 40 + "\x00",
    5,
    5.5,
    True,
    None,
    [],
    {},
]


def _outcome(field: serializers.Field, value: object) -> object:
    try:
        return ("value", field.run_validation(value))
    except serializers.ValidationError as exc:
        # A field's errors: a list of ErrorDetail, each with its code.
        assert isinstance(exc.detail, list)
        details = [d for d in exc.detail if isinstance(d, serializers.ErrorDetail)]
        assert len(details) == len(exc.detail)
        return ("errors", [(str(d), d.code) for d in details])


@pytest.mark.parametrize("rule", [terms.DESCRIPTION, terms.EXTERNAL_SYSTEM, terms.EXTERNAL_ID])
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_term_field_answers_as_drf_did(rule, value):
    before = StrictCharField(min_length=rule.min_length, max_length=rule.max_length)
    now = TermField(rule, help_text="")
    assert _outcome(now, value) == _outcome(before, value)


def test_the_inbox_fields_are_the_terms_rules():
    fields = InboxSerializer().fields
    assert fields["description"].rule == terms.DESCRIPTION
    assert fields["externalSystem"].rule == terms.EXTERNAL_SYSTEM
    assert fields["externalId"].rule == terms.EXTERNAL_ID


def test_terms_are_trimmed_and_the_deadline_kept_in_utc():
    paris = dt.timezone(dt.timedelta(hours=1))
    checked = terms.terms_check(
        description="  Ship it \u00a0",
        deadline=dt.datetime(2030, 3, 1, 18, 0, tzinfo=paris),
        external_system=" acme ",
        external_id="\tacme/app#1",
    )
    assert checked == terms.Terms(
        description="Ship it",
        deadline=dt.datetime(2030, 3, 1, 17, 0, tzinfo=dt.UTC),
        external_system="acme",
        external_id="acme/app#1",
    )


def test_every_refused_term_is_named_at_once_in_the_contracts_words():
    with pytest.raises(terms.TermsInvalid) as caught:
        terms.terms_check(
            description=" ",
            deadline=dt.datetime(2030, 3, 1, 18, 0),
            external_system="x" * 33,
            external_id="ok",
        )
    assert caught.value.said == (
        "description: This field may not be blank.; "
        "deadline: Add a UTC offset or Z: a time without one is ambiguous.; "
        "externalSystem: Ensure this field has no more than 32 characters."
    )


def test_no_deadline_is_a_term_too():
    checked = terms.terms_check(
        description="d", deadline=None, external_system="s", external_id="i"
    )
    assert checked.deadline is None
