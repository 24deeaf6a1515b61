"""Short forms of text for logs, pages and the admin (an excerpt; a title and
a body), and the one definition of a blank string.

Blank. The API refuses a string that is empty once trimmed, and the OpenAPI
document says the same with a `pattern`. Python's `str.strip()` and a JSON
Schema validator's `\\s` disagree: ECMA-262's `\\s` (what OpenAPI's `pattern`
means) lacks NEL (U+0085) and the separators U+001C..U+001F, which Python
strips, and has the BOM (U+FEFF), which Python keeps. So blank is defined here
once, as a set of characters: every character either of them calls white
space, plus the zero-width characters that show nothing (U+180E, U+200B..U+200D,
U+2060). The server trims exactly these (`strip_blank`), and the schema's
pattern (`NOT_BLANK_PATTERN`) is a character class of the same set written
with `\\uXXXX` escapes, which ECMA-262 and Python's `re` read alike. The document
carries `TEXT_PATTERN`: the same, and no NUL (which the server refuses too).
"""

from __future__ import annotations

import re
import textwrap
import unicodedata

EXCERPT_LENGTH = 300


def excerpt(text: str | None, limit: int = EXCERPT_LENGTH) -> str:
    """`text` on one line (runs of white space folded), cut to `limit`
    characters with an ellipsis: for error messages and response excerpts."""
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


TITLE_LENGTH = 80


def title_and_body(text: str | None, limit: int = TITLE_LENGTH) -> tuple[str, str]:
    """A description as a title and a body, for pages that list or head it: the
    title is its first line, cut at a word boundary to at most `limit`
    characters (with an ellipsis); the body is everything after the title, so
    nothing is lost. A first line cut short continues in the body after an
    ellipsis. A word longer than the limit is cut inside (there is no boundary).
    """
    text = (text or "").strip()
    first, _, rest = text.partition("\n")
    first, rest = first.strip(), rest.strip()
    if len(first) <= limit:
        return first, rest
    head = first[: limit - 1]
    space = head.rfind(" ")
    # A boundary in the first half would leave a stub of a title: cut the word.
    cut = space if space > limit // 2 else limit - 1
    title = first[:cut].rstrip() + "…"
    body = "…" + first[cut:].lstrip()
    return title, f"{body}\n{rest}" if rest else body


# Python's str.isspace() (which str.strip() uses), as a list of ranges.
_PYTHON_SPACE = [
    (0x09, 0x0D),
    (0x1C, 0x20),
    (0x85, 0x85),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
]
# ECMA-262's \s beyond those: the byte order mark (ZWNBSP).
_ECMA_ONLY_SPACE = [(0xFEFF, 0xFEFF)]
# Invisible: Mongolian vowel separator, zero-width space, non-joiner, joiner,
# word joiner.
_ZERO_WIDTH = [(0x180E, 0x180E), (0x200B, 0x200D), (0x2060, 0x2060)]

BLANK: frozenset[str] = frozenset(
    chr(code)
    for first, last in (*_PYTHON_SPACE, *_ECMA_ONLY_SPACE, *_ZERO_WIDTH)
    for code in range(first, last + 1)
)
_BLANK_CHARS = "".join(sorted(BLANK))


def strip_blank(text: str) -> str:
    """`text` without blank characters at either end."""
    return text.strip(_BLANK_CHARS)


def is_blank(text: str) -> bool:
    """True when `text` is empty or holds only blank characters."""
    return not strip_blank(text)


def _class_of(characters: frozenset[str]) -> str:
    """A regex character class body for `characters`, in ranges of `\\uXXXX`."""
    codes = sorted(ord(ch) for ch in characters)
    ranges: list[tuple[int, int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return "".join(
        f"\\u{first:04x}" if first == last else f"\\u{first:04x}-\\u{last:04x}"
        for first, last in ranges
    )


# Matches (with re.search, or JSON Schema's unanchored `pattern`) exactly the
# strings that are not blank: one character outside the set is enough.
NOT_BLANK_PATTERN = f"[^{_class_of(BLANK)}]"

# What the OpenAPI document says of a non-blank string field: not blank, and
# no NUL anywhere (PostgreSQL cannot store one; DRF's CharField refuses it,
# "Null characters are not allowed."). Anchored, one pattern (JSON Schema has
# one per schema): leading blanks, a character neither blank nor NUL, then
# anything but NUL. Each part gives way to the next on one character only, so
# a match takes linear time in every engine. Python's `$` also matches before
# a final newline, which the last part would take anyway: the two readings
# accept the same strings.
TEXT_PATTERN = f"^[{_class_of(BLANK)}]*[^{_class_of(BLANK)}\\u0000][^\\u0000]*$"


# --- one line, for a header ---------------------------------------------------------


def is_control(character: str) -> bool:
    """A control character (Unicode's Cc: C0, DEL, C1; CR, LF and tab among
    them) or one of the two Unicode line breaks (U+2028, U+2029): what ends
    or mangles a line wherever the text is shown or sent (a mail header ends
    at CR/LF, a terminal obeys ESC)."""
    return character in "\u2028\u2029" or unicodedata.category(character) == "Cc"


def has_control_characters(text: str) -> bool:
    return any(is_control(character) for character in text)


def one_line(text: str | None) -> str:
    """`text` as one line, for a mail subject or a heading built from what
    people typed: every control character becomes a space, runs of white
    space fold to one, and the ends are trimmed. Nothing else changes."""
    spaced = "".join(" " if is_control(character) else character for character in text or "")
    return " ".join(spaced.split())


# --- lines a mail body can carry ----------------------------------------------------

MAIL_LINE_WIDTH = 78
_LINE_PREFIX = re.compile(r"^[ \t]*(?:\|[ \t]?)?")


def wrapped_for_mail(text: str, width: int = MAIL_LINE_WIDTH) -> str:
    """`text` with every line longer than `width` wrapped at spaces, each
    piece keeping the line's indentation and quote marker (`    | `). A
    plain-text mail is read in such lines; and a body with a line over
    998 bytes makes Django send it quoted-printable, which cuts links with
    `=` and turns `?email=` into `?email=3D` wherever the raw message is read
    (the quick start's log). Words are never split, so a link stays whole."""
    lines = []
    for line in text.split("\n"):
        if len(line) <= width:
            lines.append(line)
            continue
        found = _LINE_PREFIX.match(line)  # always matches, if only ""
        prefix = found.group(0) if found else ""
        lines.extend(
            textwrap.wrap(
                line[len(prefix) :],
                width=width,
                initial_indent=prefix,
                subsequent_indent=prefix,
                break_long_words=False,
                break_on_hyphens=False,
            )
            or [line]
        )
    return "\n".join(lines)
