"""The Settings pages share their header, tables, empty lists, delivery badge
and confirm form as partials (accounts' settings_header and settings_table
tags, templates/settings/_*.html), so a change to one is a change to all, and
each page writes only its own words."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.template import Context, Template, TemplateSyntaxError

TEMPLATES = Path(settings.BASE_DIR) / "templates"
SETTINGS_PAGES = sorted(
    path
    for path in TEMPLATES.rglob("*.html")
    if '{% extends "settings/base.html" %}' in path.read_text()
)


def render(source: str, **context) -> str:
    return Template("{% load settings_pages %}" + source).render(Context(context))


def test_the_header_says_where_the_page_is_its_title_and_what_it_is_for():
    html = render(
        '{% settings_header title "/settings/webhooks/" "Webhooks" %}'
        "Events, <code>signed</code>.{% endsettings_header %}",
        title="Delete the <jira> endpoint?",
    )
    assert " ".join(html.split()) == (
        '<div class="page-header"> <div> <p class="muted"><a href="/settings/">Settings</a>'
        ' \u203a <a href="/settings/webhooks/">Webhooks</a></p>'
        " <h1>Delete the &lt;jira&gt; endpoint?</h1>"
        ' <p class="muted">Events, <code>signed</code>.</p> </div> </div>'
    )


def test_the_settings_index_links_to_no_settings_above_it_and_no_intro_no_paragraph():
    html = render('{% settings_header "Profile" index=True %}{% endsettings_header %}')
    assert "/settings/" not in html and html.count("<p") == 0
    assert "<h1>Profile</h1>" in html


def test_crumbs_come_in_pairs():
    with pytest.raises(TemplateSyntaxError, match="pairs"):
        render('{% settings_header "Title" "/settings/webhooks/" %}{% endsettings_header %}')


def test_a_table_is_its_block_in_the_wrapper_it_scrolls_in():
    rows = "<tbody><tr><td>{{ name }}</td></tr></tbody>"
    html = render("{% settings_table %}" + rows + "{% endsettings_table %}", name="<b>")
    assert " ".join(html.split()) == (
        '<div class="table-wrap"> <table class="table">'
        " <tbody><tr><td>&lt;b&gt;</td></tr></tbody> </table> </div>"
    )
    stacked = render("{% settings_table stack=True %}<tbody></tbody>{% endsettings_table %}")
    assert '<table class="table table-stack">' in stacked


def test_an_empty_list_says_so_in_its_own_words():
    html = render('{% include "settings/_empty.html" with empty=words %}', words="No <keys> yet.")
    assert html.strip() == '<p class="muted">No &lt;keys&gt; yet.</p>'


def test_every_settings_page_uses_the_shared_parts():
    assert len(SETTINGS_PAGES) >= 15
    by_hand = {
        str(path.relative_to(TEMPLATES)): found
        for path in SETTINGS_PAGES
        if (
            found := [
                markup
                for markup in (
                    'class="page-header"',
                    '<span class="badge badge-ok">Delivered</span>',
                    '">Cancel</a>',
                    'class="table-wrap"',
                )
                if markup in path.read_text()
            ]
        )
    }
    assert by_hand == {}
    assert all("{% settings_header" in path.read_text() for path in SETTINGS_PAGES)
