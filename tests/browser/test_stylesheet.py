"""The stylesheet as the browser reads it, at phone and desktop size.

An `@media (max-width: 40rem)` block left open once swallowed every rule after
it: on a desktop the navigation read "Accord3", the Accord's filter was
unstyled, "By when" and "Scopes" sat in the browser's default boxes. Nothing
failed: an unclosed block is valid CSS (it ends at the end of the file), and
every page still passed the overflow and axe-core checks. Two checks catch
that class of fault:

- the file as the browser parsed it (its CSSOM) is the file as written: every
  rule, under the same media conditions, in the same order, with every
  declaration kept (a dropped declaration is a typo or an unsupported value),
  and the file's rules written at the start of a line (its top level) are top
  level in the browser; a block that is never closed, or closed twice, is
  named with its line;
- styles the stylesheet sets, read back from the page at both sizes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import expect

from audit.services import Actor
from commitments import services

STYLESHEET = Path(__file__).resolve().parents[2] / "static" / "css" / "app.css"


@dataclass
class SourceRule:
    conditions: tuple[str, ...]
    selector: str
    line: int
    properties: list[str] = field(default_factory=list)


def _blank_out(text: str, *, strings: bool = True) -> str:
    """`text` with comments (and the insides of strings, unless `strings` is
    false) replaced by spaces, lines kept: braces and semicolons in them are
    not structure."""
    out = list(text)
    i = 0
    while i < len(text):
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = len(text) if end == -1 else end + 2
            for j in range(i, end):
                if out[j] != "\n":
                    out[j] = " "
            i = end
        elif text[i] in "\"'":
            quote, j = text[i], i + 1
            while j < len(text) and text[j] != quote and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if strings:
                for k in range(i + 1, min(j, len(text))):
                    out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def read_stylesheet(text: str) -> tuple[list[SourceRule], list[str]]:
    """The style rules of a stylesheet as written (media conditions, selector,
    declared properties) and its structural faults: a block never closed, a
    `}` closing nothing, a block inside a style rule. A small reader for this
    file's subset of CSS (style rules, @media, @keyframes), not a general one."""
    plain = _blank_out(text)
    uncommented = _blank_out(text, strings=False)
    rules: list[SourceRule] = []
    faults: list[str] = []
    # Open blocks: (kind, condition, line); kind is "media", "keyframes", "style".
    stack: list[tuple[str, str, int]] = []
    start = 0
    for i, ch in enumerate(plain):
        if ch not in "{};":
            continue
        line = plain.count("\n", 0, i) + 1
        chunk = " ".join(uncommented[start:i].split())
        if ch == "{":
            if stack and stack[-1][0] == "style":
                faults.append(
                    f"line {line}: a block inside the style rule of line {stack[-1][2]} "
                    "(a missing `}` above?)"
                )
            if chunk.startswith("@media"):
                stack.append(("media", chunk[len("@media") :].strip(), line))
            elif chunk.startswith("@keyframes"):
                stack.append(("keyframes", chunk, line))
            elif stack and stack[-1][0] in ("keyframes", "frame"):
                stack.append(("frame", chunk, line))
            else:
                conditions = tuple(c for kind, c, _ in stack if kind == "media")
                rules.append(SourceRule(conditions, chunk, line))
                stack.append(("style", chunk, line))
        elif ch == ";":
            if stack and stack[-1][0] == "style" and ":" in chunk:
                rules[-1].properties.append(chunk.split(":", 1)[0].strip().lower())
        else:  # }
            if stack and stack[-1][0] == "style" and ":" in chunk:
                rules[-1].properties.append(chunk.split(":", 1)[0].strip().lower())
            if not stack:
                faults.append(f"line {line}: `}}` closes no block")
            else:
                stack.pop()
        start = i + 1
    for kind, condition, line in stack:
        faults.append(f"line {line}: the {kind} block `{condition}` is never closed")
    return rules, faults


def top_level_selectors(text: str) -> list[str]:
    """The selectors the file writes at the start of a line: the rules its
    author meant to be at the top level (rules inside @media are indented)."""
    plain = _blank_out(text)
    uncommented = _blank_out(text, strings=False)
    selectors, current = [], ""
    for raw, line in zip(uncommented.splitlines(), plain.splitlines(), strict=True):
        if current or (line and not line[0].isspace() and line[0] not in "@}"):
            if not line.strip() and not current:
                continue
            if "{" in line:
                current += raw[: line.index("{")]
                selectors.append(" ".join(current.split()))
                current = ""
            elif line.strip():
                current += raw + " "
    return selectors


# The CSSOM of app.css: every style rule with its media conditions, and the
# values it keeps for the properties the file declares.
_CSSOM = """(properties) => {
  const sheet = [...document.styleSheets].find(s => s.href && s.href.includes('/css/app'));
  const rules = [];
  const walk = (list, conditions, topLevel) => {
    for (const rule of list) {
      if (rule instanceof CSSMediaRule) {
        walk(rule.cssRules, conditions.concat([rule.conditionText]), false);
      } else if (rule instanceof CSSStyleRule) {
        const values = {};
        for (const p of properties) {
          const v = rule.style.getPropertyValue(p);
          if (v !== '') values[p] = v;
        }
        rules.push({conditions, selector: rule.selectorText, values, topLevel,
                    longhands: [...rule.style],
                    nested: rule.cssRules ? rule.cssRules.length : 0});
      } else if (!(rule instanceof CSSKeyframesRule)) {
        rules.push({conditions, selector: rule.cssText.slice(0, 60), values: {}, topLevel,
                    longhands: [],
                    nested: 0, unknown: true});
      }
    }
  };
  walk(sheet.cssRules, [], true);
  return rules;
}"""


def _same_selector(written: str, parsed: str) -> bool:
    """The browser serializes a selector its own way (`*::before` as
    `::before`, spaces around combinators): compare without those."""

    def norm(s: str) -> str:
        s = re.sub(r"\s+", "", s)
        return re.sub(r"(^|[,(>+~])\*(?=[:\[.#])", r"\1", s)

    return norm(written) == norm(parsed)


def test_the_reader_names_a_block_left_open():
    text = "a { color: red; }\n@media (max-width: 40rem) {\n  b { color: blue; }\n\nc { x: y; }\n"
    rules, faults = read_stylesheet(text)
    assert faults == ["line 2: the media block `(max-width: 40rem)` is never closed"]
    assert [(r.conditions, r.selector) for r in rules] == [
        ((), "a"),
        (("(max-width: 40rem)",), "b"),
        (("(max-width: 40rem)",), "c"),
    ]
    assert top_level_selectors(text) == ["a", "c"]


def test_the_reader_names_a_rule_left_open_and_a_stray_brace():
    _, faults = read_stylesheet("a { color: red;\nb { color: blue; }\n}\n}\n")
    assert faults == [
        "line 2: a block inside the style rule of line 1 (a missing `}` above?)",
        "line 4: `}` closes no block",
    ]


def test_the_browser_reads_the_stylesheet_as_written(page):
    text = STYLESHEET.read_text()
    written, faults = read_stylesheet(text)
    assert not faults, faults

    page.goto("/accounts/login/")
    properties = sorted({p for rule in written for p in rule.properties})
    parsed = page.evaluate(_CSSOM, properties)

    unknown = [r["selector"] for r in parsed if r.get("unknown") or r["nested"]]
    assert not unknown, f"rules the browser read as something else: {unknown}"
    where = [(r.line, r.conditions, r.selector) for r in written]
    got = [(tuple(r["conditions"]), r["selector"]) for r in parsed]
    # A rule with a selector the browser does not know is dropped whole.
    assert len(got) == len(where), (
        f"{len(where)} rules written, {len(got)} read: "
        f"{[w for w in where if not any(_same_selector(w[2], g[1]) for g in got)]}"
    )
    for (line, conditions, selector), (got_conditions, got_selector) in zip(
        where, got, strict=True
    ):
        assert _same_selector(selector, got_selector), (line, selector, got_selector)
        assert conditions == got_conditions, (line, selector, got_conditions)

    # A shorthand followed by one of its longhands (`border: 0; border-top: …`)
    # has no value of its own any more, but its other longhands are there.
    dropped = [
        f"line {w.line}: {w.selector} {{ {p}: … }}"
        for w, r in zip(written, parsed, strict=True)
        for p in w.properties
        if p not in r["values"] and not any(h.startswith(p + "-") for h in r["longhands"])
    ]
    assert not dropped, f"declarations the browser dropped: {dropped}"

    top = [r["selector"] for r in parsed if r["topLevel"]]
    for selector in top_level_selectors(text):
        assert any(_same_selector(selector, s) for s in top), (
            f"`{selector}` is written at the top level but the browser reads it inside a block"
        )


@pytest.fixture
def waiting(make_user):
    lead = make_user("lead@example.com", display_name="Lead")
    knight = make_user("knight@example.com", display_name="Knight")
    for n in range(3):
        services.commitment_create_pending(
            actor=Actor.for_user(lead),
            assigner=lead,
            assignee=knight,
            description=f"Polish the shield number {n}",
            deadline=None,
        )
    return knight


def style(locator, *properties: str) -> dict[str, str]:
    return locator.evaluate(
        "(el, props) => Object.fromEntries(props.map(p => [p, getComputedStyle(el)[p]]))",
        list(properties),
    )


DANGER = "rgb(180, 35, 24)"


def test_the_accord_is_styled_at_both_sizes(page, sign_in, waiting):
    sign_in(page, waiting)
    page.goto("/")

    # The count of waiting requests is a badge beside "Accord", not "Accord3".
    badge = page.locator("#accord-count, .nav-count").first
    assert style(badge, "backgroundColor", "borderRadius", "marginLeft") == {
        "backgroundColor": "rgb(255, 209, 102)",
        "borderRadius": "999px",
        "marginLeft": "5.6px",
    }
    # The filter is one flexible row that wraps, its fields beside their labels.
    assert style(page.locator(".accord-filter"), "display", "flexWrap") == {
        "display": "flex",
        "flexWrap": "wrap",
    }
    assert style(page.locator(".accord-filter .filter-field").first, "display") == {
        "display": "flex"
    }
    # The table's rows: Decline in the danger colour; the name column cut on a
    # desktop, whole on a phone.
    the_row = page.locator("tr", has_text="Polish the shield number 1")
    assert style(the_row.locator("details.decline summary"), "color") == {"color": DANGER}
    assert style(the_row.locator(".answer"), "display") == {"display": "flex"}
    name = the_row.locator("td.truncate")
    if page.viewport == "desktop":
        assert style(name, "maxWidth", "whiteSpace") == {
            "maxWidth": "224px",
            "whiteSpace": "nowrap",
        }
    else:
        assert style(name, "maxWidth", "whiteSpace") == {"maxWidth": "none", "whiteSpace": "normal"}


def test_the_deadline_picker_and_the_scopes_are_styled_at_both_sizes(page, sign_in, waiting):
    sign_in(page, waiting)
    page.goto("/commitments/new")
    picks = page.locator("fieldset.deadline-picks")
    expect(picks).to_be_visible()
    # Not the browser's default fieldset (a 2px groove border and padding).
    assert style(picks, "borderTopWidth", "paddingLeft") == {
        "borderTopWidth": "0px",
        "paddingLeft": "0px",
    }
    assert style(picks.locator("legend"), "fontWeight") == {"fontWeight": "600"}
    assert style(picks.locator(".choice").first, "display", "alignItems") == {
        "display": "flex",
        "alignItems": "center",
    }

    page.goto("/settings/tokens/")
    scopes = page.locator("form fieldset").first
    expect(scopes).to_contain_text("Scopes")
    assert style(scopes, "borderTopWidth", "paddingLeft") == {
        "borderTopWidth": "0px",
        "paddingLeft": "0px",
    }
    assert style(scopes.locator("legend"), "fontWeight") == {"fontWeight": "600"}
