"""Knowledge of a tracker kind lives in its class, chosen by the registry
(`trackers.kinds`): no product module outside `trackers/` tests a kind by its
string, and inside it only the registry names one. The test harness is left
out: it plays the trackers themselves (it signs as each does), and must not
borrow the classes it checks."""

from __future__ import annotations

import ast
from pathlib import Path

from trackers.kinds import TRACKERS, Kind, Tracker, tracker_for

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = Path("trackers/kinds/__init__.py")
LEFT_OUT = {".venv", "tests", "node_modules", ".git"}


def _modules(root: Path) -> list[Path]:
    return [
        path.relative_to(root)
        for path in sorted(root.rglob("*.py"))
        if not LEFT_OUT & set(path.relative_to(root).parts)
        # Migrations are history: they keep the strings of their day.
        and "migrations" not in path.relative_to(root).parts
    ]


def _kind_strings(node: ast.AST) -> list[str]:
    """The kind strings in `node` itself, or in the tuple/list/set it is."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in Kind.values:
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for element in node.elts for s in _kind_strings(element)]
    return []


def kind_tests(root: Path) -> list[str]:
    """Where a module tests a tracker kind by string: a comparison or a match
    with a kind's string, a kind's string as a dict key (outside `trackers/`);
    any kind's string at all (inside it, but for the registry)."""
    found = []
    for relative in _modules(root):
        inside = relative.parts[0] == "trackers"
        if relative == REGISTRY:
            continue
        tree = ast.parse((root / relative).read_text(), filename=str(relative))
        for node in ast.walk(tree):
            if inside:
                hits = _kind_strings(node) if isinstance(node, ast.Constant) else []
            elif isinstance(node, ast.Compare):
                hits = [s for side in (node.left, *node.comparators) for s in _kind_strings(side)]
            elif isinstance(node, ast.Dict):
                hits = [s for key in node.keys if key is not None for s in _kind_strings(key)]
            elif isinstance(node, ast.MatchValue):
                hits = _kind_strings(node.value)
            else:
                hits = []
            found += [f"{relative}:{node.lineno}: {hit!r}" for hit in hits]  # type: ignore[attr-defined]
    return found


def test_no_module_but_the_registry_tests_a_tracker_kind_by_string():
    assert kind_tests(ROOT) == []


def test_the_rule_finds_a_kind_tested_by_string(tmp_path):
    """The scan sees each shape of the old code: `kind == "linear"` and a
    table keyed by kind outside `trackers/`, any kind string inside it."""
    (tmp_path / "integrations").mkdir()
    (tmp_path / "integrations" / "x.py").write_text(
        'def f(kind):\n    return kind == "linear" or kind in ("jira",)\n'
        'HEADERS = {"github": "X-Hub-Signature-256"}\nEXAMPLE = {"externalSystem": "jira"}\n'
    )
    (tmp_path / "trackers").mkdir()
    (tmp_path / "trackers" / "api.py").write_text('READERS = {"gitlab": None}\n')
    (tmp_path / "trackers" / "migrations").mkdir()
    (tmp_path / "trackers" / "migrations" / "0002.py").write_text('SITE = {"github": "x"}\n')
    assert sorted(kind_tests(tmp_path)) == [
        "integrations/x.py:2: 'jira'",
        "integrations/x.py:2: 'linear'",
        "integrations/x.py:3: 'github'",
        "trackers/api.py:1: 'gitlab'",
    ]


def test_every_kind_has_its_class():
    assert set(TRACKERS) == set(Kind.values)
    for kind in Kind.values:
        tracker = tracker_for(kind)
        assert isinstance(tracker, Tracker)
        assert type(tracker).read is not Tracker.read, kind
        assert tracker.scheme.header and tracker.delivery_headers and tracker.identity_field
