"""The parts every Settings page shares, so each page writes only its own
words: the header (where the page sits, its title, what it is for) and the
table's wrapper.

The Settings pages of every app use it (accounts serves /settings/ and the
layout they extend, templates/settings/base.html). The markup is in
templates/settings/_header.html and _table.html; the delivery badge, the
confirm form and a list's empty state are plain includes beside them
(_delivery_status.html, _confirm.html, _empty.html). The two wrap a page's
own markup, which `{% include %}` cannot, hence tags.
"""

from __future__ import annotations

from django import template
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.simple_block_tag(end_name="endsettings_header")
def settings_header(content: SafeString, title: str, *crumbs: str, index: bool = False) -> str:
    """The page header: "Settings" and any further `crumbs` (pairs of a URL
    and its label: `{% url ... as x %}` first) above the `title`, and the
    block's content, when there is any, as the page's introduction. `index`:
    the Settings page itself, which links to no "Settings" above it."""
    if len(crumbs) % 2:
        raise template.TemplateSyntaxError(
            "settings_header: crumbs come in pairs, a URL and its label."
        )
    links = list(zip(crumbs[::2], crumbs[1::2], strict=True))
    # The block is template output, escaped as it was rendered; stripping it
    # drops the mark that says so (str.strip returns a plain str).
    intro = mark_safe(content.strip())  # noqa: S308
    return render_to_string(
        "settings/_header.html",
        {"title": title, "crumbs": links, "intro": intro, "index": index},
    )


@register.simple_block_tag(end_name="endsettings_table")
def settings_table(content: SafeString, *, stack: bool = False) -> str:
    """A table of the page's things: the block (its `<thead>` and `<tbody>`)
    inside the wrapper it scrolls in when it is wider than its box; `stack`:
    its rows stack on a phone (`table-stack`)."""
    # The block is template output, escaped as it was rendered; stripping it
    # drops the mark that says so (str.strip returns a plain str).
    body = mark_safe(content.strip())  # noqa: S308
    return render_to_string("settings/_table.html", {"body": body, "stack": stack})
