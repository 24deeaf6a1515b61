"""Form fields of the pages that judge text as the API does."""

from __future__ import annotations

from typing import Any

from django import forms

from lib.text import strip_blank


class TextField(forms.CharField):
    """Django's CharField, trimmed by `lib.text`'s one definition of blank (the
    API's, `lib.json_api.StrictCharField`) instead of `str.strip()`: a value of
    only blank characters (NEL, NBSP, a zero-width space, the byte order mark)
    is empty, so "This field is required." when it is; the same characters come
    off both ends before the length limits apply."""

    def to_python(self, value: Any) -> Any:
        if value not in self.empty_values:
            value = str(value)
            if self.strip:
                value = strip_blank(value)
        if value in self.empty_values:
            return self.empty_value
        return value
