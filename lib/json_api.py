"""What every JSON API view of the service shares: JSON answers whatever the
Accept header asks for, and a body that must be a JSON object, validated
all-or-nothing by a serializer, with errors in the envelope (lib.api_errors).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from django.core.validators import RegexValidator
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.serializers import Serializer

from lib.api_errors import ApiError
from lib.text import TEXT_PATTERN, is_blank, strip_blank

JSON = "application/json"


class JsonOnlyNegotiation(DefaultContentNegotiation):
    """Always answer JSON, whatever the Accept header asks for (never 406)."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        first = next(iter(renderers))  # the view's renderers, JSON first
        return first, first.media_type


class ShallowFields(serializers.Serializer[Any]):
    # A serializer whose fields are shallow copies of the declared ones (a
    # comment, not a docstring: drf-spectacular would describe every schema
    # made from a subclass without a docstring of its own with it).
    #
    # DRF deep-copies every declared field for each serializer made (a
    # field's deep copy builds it again from its arguments, validators and
    # all), which cost a hot API call more than its own checks. A shallow
    # copy shares what the declared field holds (its validators, its error
    # messages), which validating never changes, and is bound to the
    # serializer as DRF binds it. For flat serializers of plain fields only
    # (no nested serializer, no field whose state a call changes).

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        return {name: copy.copy(field) for name, field in self._declared_fields.items()}


def invalid_payload(message: str, **details: str) -> ApiError:
    return ApiError(message, error="invalid_payload", status_code=400, details=details)


def validated_body(request: Request, serializer_class: type[Serializer[Any]]) -> dict[str, Any]:
    """The body as a JSON object, validated all-or-nothing by `serializer_class`."""
    media_type = request.content_type.split(";", 1)[0].strip().lower()
    if media_type != JSON:
        shown = media_type or "none"
        raise invalid_payload(
            "The request body must be JSON (Content-Type: application/json).",
            body=f"Unsupported content type '{shown}'.",
        )
    try:
        data = request.data
    except RecursionError:  # absurdly deep nesting; json gives up before we do
        raise invalid_payload(
            "The request body is not valid JSON.", body="Nested too deeply."
        ) from None
    if not isinstance(data, dict):
        raise invalid_payload(
            "The request body must be a JSON object.", body="Expected a JSON object."
        )
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    validated: dict[str, Any] = serializer.validated_data
    return validated


class TextPatternValidator(RegexValidator):
    """`TEXT_PATTERN`, which drf-spectacular writes into the document as the
    field's `pattern`. On the server it never has the last word: a blank value
    is refused before validators run ("may not be blank"), and a value with a
    NUL is DRF's ("Null characters are not allowed."), so this one stays quiet
    on those rather than add a second, wrong message."""

    def __init__(self) -> None:
        super().__init__(TEXT_PATTERN, message="This field may not be blank.")

    def __call__(self, value: Any) -> None:
        if isinstance(value, str) and "\x00" in value:
            return
        super().__call__(value)


class StrictCharField(serializers.CharField):
    """A string that must not be blank, trimmed, and never made from a number
    or a boolean.

    Blank is `lib.text`'s one definition, on both sides of the contract: the
    value is trimmed of those characters before the length limits apply, a
    value of nothing else is "may not be blank", and the OpenAPI document
    carries `TEXT_PATTERN` (from the validator below), which a trimmed,
    non-blank value without NUL always matches and any other never does,
    whether a client's validator reads it as ECMA-262 or as Python.
    """

    default_error_messages = {"invalid": "Must be a string."}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators.append(TextPatternValidator())

    def run_validation(self, data: Any = empty) -> Any:
        if isinstance(data, str) and self.trim_whitespace and is_blank(data):
            data = ""  # DRF answers "may not be blank" (or "" when allowed)
        return super().run_validation(data)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return strip_blank(data) if self.trim_whitespace else data
