"""Audit actions come from one enumeration, `audit.models.AuditAction`: the
one write path refuses any other word, and no module of the service spells
an action as a bare string (written, matched or keyed by)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from django.conf import settings

from audit.models import AuditAction, AuditEvent
from audit.services import Actor, UnknownAuditAction, audit_event_build, audit_event_record

# The service's own code: every app, lib, config and the benchmarks (not the
# tests, not the migrations, which keep the history as it was written).
SOURCE_ROOTS = (
    "accounts",
    "audit",
    "benchmarks",
    "commitments",
    "config",
    "gather",
    "integrations",
    "lib",
    "notifications",
    "ratelimits",
    "relay",
    "trackers",
    "webhooks",
)
# The functions that take an audit action, by the names they are called by;
# keywords that carry an action to them, or match one in a query.
WRITERS = {
    "audit_event_record",
    "audit_event_build",
    "admin_event_record",
    "admin_action_record",
    "_record_for_user",
}
ACTION_KEYWORDS = {"action", "audit_action", "action__in"}
# argparse's `add_argument(..., action="store_true")` is another word's `action`.
NOT_AUDIT_CALLS = {"add_argument"}


def _called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _strings(node: ast.AST) -> list[str]:
    return [
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _is_action_attribute(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "action"


def bare_actions(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, string) of every audit action spelt as a string in `tree`:
    passed to a writer or as `action=`, compared with an event's `.action`,
    or the keys of a dict keyed by actions."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node) not in NOT_AUDIT_CALLS:
            for keyword in node.keywords:
                if keyword.arg in ACTION_KEYWORDS:
                    found += [(node.lineno, s) for s in _strings(keyword.value)]
            if _called_name(node) in WRITERS:
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        found.append((node.lineno, arg.value))
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_action_attribute(side) for side in sides):
                for side in sides:
                    if isinstance(side, ast.Constant | ast.List | ast.Tuple | ast.Set):
                        found += [(node.lineno, s) for s in _strings(side)]
        elif isinstance(node, ast.Dict) and node.keys:
            keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
            if all(isinstance(k, str) and k in AuditAction.values for k in keys):
                found += [(node.lineno, str(k)) for k in keys]
    return found


@functools.cache
def _source_trees() -> tuple[tuple[Path, ast.Module], ...]:
    """Every source file and its syntax tree, read once for the tests here."""
    base = Path(settings.BASE_DIR)
    paths = sorted(
        path
        for root in SOURCE_ROOTS
        for path in (base / root).rglob("*.py")
        if "migrations" not in path.parts
    )
    return tuple((path, ast.parse(path.read_text(), str(path))) for path in paths)


@pytest.mark.django_db
def test_a_write_of_an_action_outside_the_enumeration_is_refused(assigner):
    before = AuditEvent.objects.count()
    with pytest.raises(UnknownAuditAction, match="declinde"):
        audit_event_record(
            actor=Actor.for_user(assigner),
            subject=assigner,
            action="declinde",  # what the test is about
        )
    assert AuditEvent.objects.count() == before


@pytest.mark.django_db
def test_every_action_of_the_enumeration_is_written_as_it_is_stored(assigner):
    for action in AuditAction:
        event = audit_event_build(actor=Actor.system(), subject=assigner, action=action)
        assert event.action == action.value
    # A plain string that is an action's value is the same action (rows read
    # back from the database are plain strings).
    event = audit_event_record(actor=Actor.system(), subject=assigner, action="declined")
    assert AuditEvent.objects.get(pk=event.pk).action == AuditAction.DECLINED


def test_no_module_spells_an_action_as_a_bare_string():
    base = Path(settings.BASE_DIR)
    offences = [
        f"{path.relative_to(base)}:{line}: {word!r}"
        for path, tree in _source_trees()
        for line, word in bare_actions(tree)
    ]
    assert offences == [], "use audit.models.AuditAction instead:\n" + "\n".join(offences)


@pytest.mark.parametrize(
    "code",
    [
        'audit_event_record(actor=a, subject=s, action="declined")',
        'audit_event_build(actor=a, subject=s, action="made_up")',
        '_record_for_user(request, user, "user_signed_in")',
        'admin_action_record(request, obj, "admin_retried", why=1)',
        '_note(c, actor=a, action="closed_not_done" if x else "created", payload={})',
        'AuditEvent.objects.filter(action="declined")',
        'AuditEvent.objects.filter(action__in=["accepted", "declined"])',
        'event.action == "renegotiated"',
        'event.action in ("draft_edited", "renegotiated")',
        'WORDS = {"created": "Asked", "declined": "Declined"}',
    ],
)
def test_the_scan_finds_a_bare_action(code):
    assert bare_actions(ast.parse(code)) != []


@pytest.mark.parametrize(
    "code",
    [
        'parser.add_argument("--staff", action="store_true")',
        "audit_event_record(actor=a, subject=s, action=AuditAction.DECLINED)",
        'payload = {"deadline": d, "accepted": a, "words": w}',
        'Change(action=OTHER, note="nothing to do")',
    ],
)
def test_the_scan_lets_other_words_be(code):
    assert bare_actions(ast.parse(code)) == []


def test_every_action_of_the_enumeration_has_a_writer():
    """A member nothing writes is a word that drifted from the code."""
    used = {
        node.attr
        for path, tree in _source_trees()
        if path.name != "models.py" or path.parent.name != "audit"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "AuditAction"
    }
    assert sorted(set(AuditAction.names) - used) == []
