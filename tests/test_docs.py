"""The docs match the repository: code and docs cite only documents that are in
it (the section they name exists), the README's table lists every page of
docs/, and the README carries no figure that goes stale (test counts, times,
ratios live in docs/testing.md and docs/benchmarks.md)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from django.apps import apps

from tests.harness.tree import PACKAGES as APPS
from tests.harness.tree import ROOT

DOCS = ROOT / "docs"
# Where the project's own text is: every package, the tests, the benchmarks.
SOURCES = [
    path
    for path in ROOT.rglob("*.py")
    if not {".venv", "var", "node_modules", "migrations"} & set(path.relative_to(ROOT).parts)
]
TEXTS = [*SOURCES, ROOT / "README.md", *DOCS.rglob("*.md")]

# Documents that lived outside the repository (the contract's DECISIONS and spec).
OUTSIDE = re.compile(r"DECISIONS|\(spec,|\bthe spec\b|\bspec's\b")
CITATION = re.compile(r"docs/([\w/-]+\.md), \"([^\"]+)\"")


def _one_line(text: str) -> str:
    """The text with comment markers and line breaks gone, so a citation that
    runs over lines of a comment reads whole."""
    return " ".join(re.sub(r"\n\s*#", " ", text).split())


def _headings(document: Path) -> list[str]:
    """Its headings, and the bold run-in heads that open its paragraphs."""
    lines = document.read_text().splitlines()
    return [line.lstrip("#").strip() for line in lines if line.startswith("#")] + [
        line.lstrip("- ").removeprefix("**") for line in lines if line.lstrip("- ").startswith("**")
    ]


def test_nothing_cites_a_document_outside_the_repository():
    this = Path(__file__).resolve()
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in TEXTS
        if path.resolve() != this
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert found == []


def test_every_cited_section_exists():
    citations = [
        (path, match.group(1), " ".join(match.group(2).split()))
        for path in SOURCES
        for match in CITATION.finditer(_one_line(path.read_text()))
    ]
    assert citations, "the scan found no citation at all: it is looking in the wrong place"
    missing = [
        f"{path.relative_to(ROOT)} cites docs/{name}, {heading!r}"
        for path, name, heading in citations
        if not (DOCS / name).exists()
        or not any(h.startswith(heading) for h in _headings(DOCS / name))
    ]
    assert missing == []


def test_the_readme_table_lists_every_page_of_docs():
    readme = (ROOT / "README.md").read_text()
    listed = set(re.findall(r"^\| \[docs/([\w-]+\.md)\]\(docs/\1\) \|", readme, re.MULTILINE))
    assert listed == {path.name for path in DOCS.glob("*.md")}


def test_the_readme_carries_no_figures_that_go_stale():
    readme = (ROOT / "README.md").read_text()
    # "2,182 tests", "2 min 25 s", "0.43\u20130.48\u00d7" (a ratio of the benchmark's floor)
    stale = (r"\d[\d,]* tests", r"\d+ min(?: \d+ s)?", r"\d\.\d+\s*(?:[\u2013-]\s*\d\.\d+)?\u00d7")
    figures = re.findall("|".join(stale), readme)
    assert figures == []


def _resolves(name: str) -> bool:
    """`app.module.name...` imports and has the attribute, or `app.Model` is a
    model's label."""
    parts = name.split(".")
    if len(parts) == 2 and parts[1][:1].isupper():
        try:
            apps.get_model(name)
        except LookupError:
            pass
        else:
            return True
    for split in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


DOCUMENTS = [ROOT / "README.md", *DOCS.rglob("*.md")]
NAMED = "|".join(APPS)
DOTTED = re.compile(rf"`((?:{NAMED})(?:\.[A-Za-z_]\w*)+)`")
PATH = re.compile(rf"`((?:{NAMED}|templates|static|tests|scripts|benchmarks)/[\w/.-]+\.\w+)`")


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_module_name_and_file_a_document_names_exists(document):
    text = document.read_text()
    names = {
        name
        for name in DOTTED.findall(text)
        # a file name, or a deployment check's id ("commitments.E003")
        if not name.endswith((".py", ".md")) and not re.search(r"\.[EW]\d{3}$", name)
    }
    missing = sorted(name for name in names if not _resolves(name))
    missing += sorted(path for path in set(PATH.findall(text)) if not (ROOT / path).exists())
    assert missing == []


def _state_machine_rows() -> dict[str, tuple[set[str], set[str]]]:
    """The table of docs/architecture.md, "The state machine": each move's
    statuses it starts from and who may make it, as the rows say them."""
    text = (DOCS / "architecture.md").read_text()
    section = text.split("## The state machine", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 6 and re.fullmatch(r"`\w+`", cells[0]):
            statuses = set(re.findall(r"`(\w+)`", cells[1]))
            people = {who.strip() for who in cells[2].split(",")}
            rows[cells[0].strip("`")] = (statuses, people)
    return rows


def test_the_architecture_table_is_the_state_machine():
    from commitments.machine import MOVES

    rows = _state_machine_rows()
    assert set(rows) == set(MOVES)
    for name, move in MOVES.items():
        people = set(move.by)
        if move.by_assigner_token:
            people.add("token")
        if move.by_tracker:
            people.add("tracker")
        assert rows[name] == ({str(s) for s in move.from_statuses}, people), name
