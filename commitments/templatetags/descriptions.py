"""A description as pages show it: a title (a short first line) and a body
(the rest, below it), so a long description heads a page, a list row or a
nudge with a line and not with a screen of bold text (lib.text.title_and_body).

    {% load descriptions %}
    {% with d=c.description|titled %}
      <a …>{{ d.title }}</a>{% if d.body %}<p>{{ d.body }}</p>{% endif %}
    {% endwith %}
"""

from __future__ import annotations

from typing import NamedTuple

from django import template

from lib.text import title_and_body

register = template.Library()


class Titled(NamedTuple):
    title: str
    body: str


@register.filter
def titled(description: str | None) -> Titled:
    return Titled(*title_and_body(description))


@register.filter
def headline(description: str | None) -> str:
    """The title alone, for a link or a label: `{{ c.description|headline }}`."""
    return title_and_body(description)[0]
