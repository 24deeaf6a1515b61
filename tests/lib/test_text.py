"""lib.text.title_and_body: a description as a title and a body (docs/pages.md,
"Long descriptions")."""

from __future__ import annotations

from django.template import Context, Template

from lib.text import TITLE_LENGTH, title_and_body


def test_a_short_description_is_all_title():
    assert title_and_body("  Ship the report ") == ("Ship the report", "")
    assert title_and_body(None) == ("", "")


def test_the_first_line_is_the_title_and_the_rest_the_body():
    assert title_and_body("Ship the report\n\nWith the Q3 numbers.\nAnd charts.") == (
        "Ship the report",
        "With the Q3 numbers.\nAnd charts.",
    )


def test_a_long_first_line_is_cut_at_a_word_and_continues_in_the_body():
    text = "Review the quarterly numbers " * 60  # 1,740 characters on one line
    title, body = title_and_body(text)
    assert len(title) <= TITLE_LENGTH and title.endswith(" quarterly…")
    assert title.startswith("Review the quarterly numbers Review")
    assert body.startswith("…numbers Review the")
    # Nothing is lost: title and body together are the description.
    assert title[:-1] + " " + body[1:] == text.strip()


def test_a_long_unbroken_word_is_cut_inside():
    word = "x" * 300
    title, body = title_and_body(f"{word} and more\nsecond line")
    assert title == "x" * (TITLE_LENGTH - 1) + "…"
    assert body == "…" + "x" * (300 - TITLE_LENGTH + 1) + " and more\nsecond line"


def test_the_template_filter_gives_both_parts_escaped():
    html = Template(
        "{% load descriptions %}{% with d=text|titled %}[{{ d.title }}]({{ d.body }}){% endwith %}"
    ).render(Context({"text": "<b>Fix</b> it\nnow & later"}))
    assert html == "[&lt;b&gt;Fix&lt;/b&gt; it](now &amp; later)"


def test_a_mail_body_is_wrapped_at_spaces_keeping_the_quote_and_whole_links():
    from lib.text import MAIL_LINE_WIDTH, wrapped_for_mail

    link = "https://commitments.example.com/accounts/signup/?email=new%40example.com&x=" + "a" * 90
    body = "    | " + "word " * 100 + "\nShort line.\n" + link

    lines = wrapped_for_mail(body).split("\n")

    quoted = [line for line in lines if line.startswith("    | ")]
    assert len(quoted) > 5 and all(len(line) <= MAIL_LINE_WIDTH for line in quoted)
    assert " ".join(line.removeprefix("    | ") for line in quoted) == ("word " * 100).strip()
    assert "Short line." in lines and link in lines  # a link longer than a line stays whole
