"""The Content-Security-Policy a response must carry, and a finder of what in
a page that policy would block (inline scripts, handlers, styles)."""

from __future__ import annotations

from html.parser import HTMLParser

REQUIRED = {
    "script-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "frame-ancestors": ["'none'"],
    "form-action": ["'self'"],
}


def policy(response) -> dict[str, list[str]]:
    header = response.headers.get("Content-Security-Policy")
    assert header, f"no Content-Security-Policy on {response.request['PATH_INFO']}"
    directives = {}
    for part in header.split(";"):
        name, *sources = part.split()
        directives[name] = sources
    return directives


def assert_strict(response) -> None:
    directives = policy(response)
    for name, sources in REQUIRED.items():
        assert directives.get(name) == sources, (name, directives)
    assert directives.get("style-src") == ["'self'"]
    header = response.headers["Content-Security-Policy"]
    assert "unsafe-inline" not in header and "unsafe-eval" not in header


# Non-executable data blocks (Django's json_script, allauth's form data): the
# policy does not apply to them and they run nothing.
DATA_TYPES = {"application/json", "application/ld+json"}


class InlineFinder(HTMLParser):
    """Everything in a page the policy would block: inline scripts without a
    nonce, event handler attributes, javascript: URLs, inline styles."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        runs_inline = not named.get("src") and not named.get("nonce")
        if tag == "script" and runs_inline and (named.get("type") or "").lower() not in DATA_TYPES:
            self.found.append(f"inline <script {attrs}>")
        if tag == "style":
            self.found.append("inline <style>")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}=...>")
            if name == "style":
                self.found.append(f"<{tag} style={value!r}>")
            url = (value or "").strip().lower()
            if name in ("href", "src", "action", "formaction") and url.startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value!r}>")


def inline_code(html: str) -> list[str]:
    finder = InlineFinder()
    finder.feed(html)
    return finder.found
