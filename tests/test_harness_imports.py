"""Test modules import no other test module (nor a conftest): what tests share
lives in tests/harness/. A test module that imports another runs the other's
module-level code and fixtures twice and ties their refactors together."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_test_modules(path: Path) -> list[str]:
    """The modules under `tests` that `path` imports, other than tests.harness."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's package
                package = path.relative_to(TESTS.parent).parent.parts
                base = ".".join(package[: len(package) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            names.append(module)
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return [
        name
        for name in names
        if (name == "tests" or name.startswith("tests."))
        and name != "tests.harness"
        and not name.startswith("tests.harness.")
    ]


def test_the_finder_sees_absolute_and_relative_imports(tmp_path, monkeypatch):
    package = TESTS / "delivery"
    source = (
        "import tests.webhooks.test_worker\n"
        "from tests.config.conftest import REAL_KEY\n"
        "from .test_outbox import x\n"
        "from tests.harness.services import FakeService\n"
        "def f():\n    from tests import conftest\n"
    )
    probe = package / "probe_never_written.py"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: source)
    assert imported_test_modules(probe) == [
        "tests.webhooks.test_worker",
        "tests.config.conftest",
        "tests.delivery.test_outbox",
        "tests",
    ]


def test_no_test_module_imports_another():
    offenders = {
        str(path.relative_to(TESTS.parent)): found
        for path in sorted(TESTS.rglob("*.py"))
        if (found := imported_test_modules(path))
    }
    assert offenders == {}, "import shared helpers from tests.harness instead"
