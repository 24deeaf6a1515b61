"""Audit actions come from one enumeration, `audit.models.AuditAction`: the
one write path refuses any other word, and no module of the service spells
an action as a bare string (written, matched or keyed by)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.conf import settings

from audit.models import RETIRED_ACTIONS, AuditAction, AuditEvent
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


def _source_files() -> list[Path]:
    base = Path(settings.BASE_DIR)
    return sorted(
        path
        for root in SOURCE_ROOTS
        for path in (base / root).rglob("*.py")
        if "migrations" not in path.parts
    )


@pytest.mark.django_db
def test_a_write_of_an_action_outside_the_enumeration_is_refused(assigner):
    before = AuditEvent.objects.count()
    with pytest.raises(UnknownAuditAction, match="declinde"):
        audit_event_record(
            actor=Actor.for_user(assigner),
            subject=assigner,
            action="declinde",  # type: ignore[arg-type]  # what the test is about
        )
    assert AuditEvent.objects.count() == before


@pytest.mark.django_db
def test_every_action_of_the_enumeration_is_written_as_it_is_stored(assigner):
    for action in AuditAction:
        event = audit_event_build(actor=Actor.system(), subject=assigner, action=action)
        assert event.action == action.value
    # A plain string that is an action's value is the same action (rows read
    # back from the database are plain strings).
    event = audit_event_record(actor=Actor.system(), subject=assigner, action="declined")  # type: ignore[arg-type]
    assert AuditEvent.objects.get(pk=event.pk).action == AuditAction.DECLINED


def test_no_module_spells_an_action_as_a_bare_string():
    base = Path(settings.BASE_DIR)
    offences = [
        f"{path.relative_to(base)}:{line}: {word!r}"
        for path in _source_files()
        for line, word in bare_actions(ast.parse(path.read_text(), str(path)))
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


def _members_named(node: ast.AST) -> set[str]:
    """The AuditAction members `node` names (`AuditAction.X`)."""
    return {
        n.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == "AuditAction"
    }


def written_actions(tree: ast.AST) -> set[str]:
    """The members `tree` passes to a writer: as `action=` (or another
    keyword that carries one) or as an argument of a writer."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node) not in NOT_AUDIT_CALLS:
            for keyword in node.keywords:
                if keyword.arg in ACTION_KEYWORDS - {"action__in"}:
                    found |= _members_named(keyword.value)
            if _called_name(node) in WRITERS:
                for arg in node.args:
                    found |= _members_named(arg)
    return found


def _outside_the_enumeration() -> list[Path]:
    return [p for p in _source_files() if p.name != "models.py" or p.parent.name != "audit"]


def test_every_action_of_the_enumeration_has_a_writer():
    """A member nothing names is a word that drifted from the code; a retired
    member (audit.models.RETIRED_ACTIONS: old rows store it) is exempt."""
    used = set().union(
        *(_members_named(ast.parse(p.read_text())) for p in _outside_the_enumeration())
    )
    retired = {action.name for action in RETIRED_ACTIONS}
    assert sorted(set(AuditAction.names) - used - retired) == []


def test_nothing_writes_a_retired_action():
    written = set().union(
        *(written_actions(ast.parse(p.read_text())) for p in _outside_the_enumeration())
    )
    assert sorted(written & {action.name for action in RETIRED_ACTIONS}) == []
    # Still a member: old rows keep the value, and the write path takes it.
    assert all(action in AuditAction for action in RETIRED_ACTIONS)


@pytest.mark.parametrize(
    ("code", "written"),
    [
        ("audit_event_record(actor=a, subject=s, action=AuditAction.WITHDRAWN)", {"WITHDRAWN"}),
        ("_note(c, actor=a, action=AuditAction.CLOSED_NOT_DONE, payload={})", {"CLOSED_NOT_DONE"}),
        ("_record_for_user(request, user, AuditAction.USER_SIGNED_IN)", {"USER_SIGNED_IN"}),
        ("WORDS = {AuditAction.CLOSED_NOT_DONE: 'Closed'}", set()),
        ("AuditEvent.objects.filter(action__in=[AuditAction.DECLINED])", set()),
    ],
)
def test_the_writer_scan_tells_a_write_from_a_read(code, written):
    assert written_actions(ast.parse(code)) == written
