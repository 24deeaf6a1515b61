"""The OpenAPI document's examples speak the glossary's words (docs/glossary.md):
no "lead" or "knight" for the assigner and assignee, no "provider key" or
"BYOK" for a model key. An error example's `error` and `message` are what the
API answers (the contract fixes `no_byok_key`), so they are not judged here."""

from __future__ import annotations

import json
import re

import pytest

pytestmark = pytest.mark.django_db

RETIRED = re.compile(r"\blead\b|\bknight\b|provider key|byok", re.IGNORECASE)


def _examples(node, found: list[tuple[str, object]]) -> list[tuple[str, object]]:
    if isinstance(node, dict):
        for name, example in (node.get("examples") or {}).items():
            value = example.get("value")
            if isinstance(value, dict):
                value = {k: v for k, v in value.items() if k not in ("error", "message")}
            found.append((name, [example.get("summary"), value]))
        for child in node.values():
            _examples(child, found)
    elif isinstance(node, list):
        for child in node:
            _examples(child, found)
    return found


def test_no_example_uses_a_retired_word(client):
    document = client.get("/api-reference/openapi.json").json()
    examples = _examples(document, [])

    assert len(examples) > 20, "the walk found too few examples: the document's shape changed"
    retired = [
        (name, text) for name, text in examples if RETIRED.search(f"{name} {json.dumps(text)}")
    ]
    assert retired == []
