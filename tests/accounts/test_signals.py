"""Signals are received only where docs/architecture.md says, and why
("Signals: where accounts tells the apps above it"): a side effect is a call,
except auth events (Django and allauth offer only signals) and the two changes
of `accounts` that an app above it acts on. A new receiver, or one that moved,
fails here until that section names it."""

from __future__ import annotations

import ast
import re

from tests.harness.tree import PACKAGES as APPS
from tests.harness.tree import ROOT


def _section() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index("## Signals: where accounts tells the apps above it")
    return text[start : text.index("\n## ", start + 1)]


def _is_receiver_decorator(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "receiver"
    )


def _connects_a_signal(node: ast.AST) -> bool:
    # `some_signal.connect(handler, ...)`; not a database's `psycopg.connect(...)`.
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "connect"
        and "signal" in ast.unparse(node.func.value).lower()
    )


def _receivers() -> tuple[set[str], set[str]]:
    """The functions decorated with @receiver ("app.module.function"), and the
    modules that connect receivers by hand ("app.module")."""
    decorated, connecting = set(), set()
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef) and any(
                    _is_receiver_decorator(d) for d in node.decorator_list
                ):
                    decorated.add(f"{module}.{node.name}")
                if _connects_a_signal(node):
                    connecting.add(module)
    return decorated, connecting


def test_every_receiver_is_named_in_the_architecture_and_lives_in_a_receivers_module():
    decorated, connecting = _receivers()
    section = _section()

    assert decorated, "the scan found no receiver at all: it is looking in the wrong place"
    modules = {name.rsplit(".", 1)[0] for name in decorated} | connecting
    assert {module.rsplit(".", 1)[1] for module in modules} == {"receivers"}
    for name in decorated:
        assert f"`{name}`" in section, f"{name} receives a signal the architecture does not name"
    for module in connecting:
        assert f"`{module}`" in section, f"{module} receives signals the architecture does not name"


def test_every_receiver_the_architecture_names_exists():
    decorated, connecting = _receivers()
    named = set(re.findall(r"`(\w+\.receivers(?:\.\w+)?)`", _section()))

    assert named
    assert named <= decorated | connecting
