"""Text filters for the account pages (allauth's), so they read like the rest."""

from __future__ import annotations

import re

from django import template
from django.utils.safestring import SafeData, mark_safe

register = template.Library()

# Names that keep their capital wherever they stand.
PROPER = {"Commitments", "Slack", "Microsoft", "Teams", "OpenAI", "Anthropic", "Google"}
_WORD = re.compile(r"[A-Za-z][A-Za-z'\u2019-]*")


@register.filter
def sentence_case(text):
    """ "Sign In" -> "Sign in", "Change Password" -> "Change password": every
    capitalised word after the first is lowered, except names and acronyms
    (API). Text with markup in it is left as it is."""
    value = str(text).strip()
    if "<" in value:
        return text
    first = _WORD.search(value)

    def lower(match: re.Match) -> str:
        word = match.group(0)
        if match.start() == first.start() or word in PROPER:
            return word
        if word[0].isupper() and word[1:] == word[1:].lower():
            return word.lower()
        return word

    result = _WORD.sub(lower, value) if first else value
    # Changing the case of letters in text already safe (no markup in it) keeps it safe.
    return mark_safe(result) if isinstance(text, SafeData) else result  # noqa: S308


@register.filter
def sentence_case_labels(form):
    """The form, its field labels and placeholders in sentence case ("Remember Me" -> "Remember
    me"). Each form instance has its own copy of its fields, so this changes
    nothing else."""
    for field in form.fields.values():
        if field.label:
            field.label = sentence_case(str(field.label))
        placeholder = field.widget.attrs.get("placeholder")
        if placeholder:
            field.widget.attrs["placeholder"] = sentence_case(str(placeholder))
    return form
