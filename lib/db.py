"""Several rows written in one round trip.

`write_together(inserts=[...], updates=[(obj, fields), ...])` writes model
instances (and `updates_where=[(queryset, {field: value}), ...]`, the UPDATE
`queryset.update(...)` runs) with the statements Django's `save()` compiles for them (the same
INSERT and UPDATE, the same values: defaults, `auto_now_add` stamps), but on
PostgreSQL as one statement, each write a data-modifying CTE of one `WITH`:

    WITH w0 AS (UPDATE ...), w1 AS (INSERT ...), w2 AS (INSERT ... RETURNING id)
    SELECT (SELECT id FROM w2)

One statement is one transaction by itself, so outside `transaction.atomic` it
needs no BEGIN and COMMIT either: one round trip where a `save()` per row in a
transaction takes the rows plus two. Elsewhere (SQLite) the rows are saved
one by one, in a transaction. The hot paths use it (commitments.services: a
transition's row, its audit row and its outbox row); docs/benchmarks.md has
what it saves.

What one statement implies: every CTE sees the same snapshot, so no write may
depend on reading another's row (the foreign keys are checked at commit:
Django declares them DEFERRABLE INITIALLY DEFERRED); an UPDATE that matches no
row is not noticed (update rows you hold, locked); `pre_save`/`post_save`
signals are not sent, so use it only for models without such receivers.

`write_decided(decide, ...)`: the same writes behind a compare-and-set (a
`Decide`: an UPDATE of at most one row on conditions the caller judged),
made only if it matched; with `Decide.found` the statement also reads the
row when it did not (what a refusal is judged on), so a refused move is one
round trip too. Each statement's text is compiled by Django once per shape
and kept ("statements compiled once per shape", below).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.core.exceptions import EmptyResultSet, FullResultSet, ValidationError
from django.db import connections, router, transaction
from django.db.models import BooleanField, F, Field, Func, Model, QuerySet, Subquery, sql
from django.db.models.expressions import Col, RawSQL
from django.db.models.lookups import Lookup
from django.db.models.query import (  # type: ignore[attr-defined]  # not in django-stubs
    FlatValuesListIterable,
    ModelIterable,
    ValuesListIterable,
    get_related_populators,
)
from django.db.models.sql.where import ExtraWhere, WhereNode


@dataclass(frozen=True)
class Decide:
    """The compare-and-set a write depends on: `queryset.update(**values)` on
    at most one row, whose conditions are what the caller judged (a status,
    a version). With `version` (a `row_version()` the caller read) the row
    must also be that version; without it, on PostgreSQL, the version the
    statement's own snapshot sees (so every part of the one statement reads
    the state the update was judged on: a row changed by a transaction that
    committed while this one waited is refused rather than written over).
    `marker`: a stand-in for the decided row's primary key in the other
    writes (for a row found by something else than its key), replaced by the
    key the update returns. `found`: the row to read when the update matches
    nothing (`queryset` without the conditions judged: what a refusal is
    judged on), in the same statement on PostgreSQL; a lookup of the table's
    own columns."""

    queryset: QuerySet[Any]
    values: dict[str, Any]
    version: str | None = None
    marker: Any = None
    found: QuerySet[Any] | None = None


@dataclass(frozen=True)
class Decided:
    """What a decided write did. `row`: the decided row as the update left
    it (all its fields, from `UPDATE ... RETURNING`), or None when the update
    matched none (and nothing was written); then `found`, the row
    `Decide.found` finds as the statement saw it (None: there is none, or no
    `found` was asked)."""

    row: Model | None
    found: Model | None = None


@dataclass(frozen=True)
class Later:
    """A `Decide`, and the `updates_where` that go with it, made by
    `build(*inputs)` -> (Decide, [(queryset, values), ...]), for a write
    whose querysets cost more to build than to run: on PostgreSQL they are
    built and compiled once per `key` (the caller's name for the shape: what
    decides the text) and the types of `inputs`, and each later write only
    puts its `inputs` where the first one's were ("a decide built once per
    shape", below). `inputs` must be every value `build` puts into the
    querysets (a primary key, not an instance; each element of an `IN` list
    one input), and `build` must make the same statement for any values of
    the same types. Elsewhere `build` runs each time."""

    key: Any
    inputs: tuple[Any, ...]
    build: Callable[..., tuple[Decide, Sequence[tuple[QuerySet[Any], dict[str, Any]]]]]


class Unindexed(Func):
    """A condition written `(<condition>) IS TRUE`: the same rows, but
    PostgreSQL's planner cannot prove a partial index's predicate from it (it
    matches an index's WHERE only to conditions of that shape), so it picks
    among the table's other indexes. For a lookup by key (ids, a commitment)
    that also checks the state a partial index keeps (`dispatched_at IS
    NULL`): planned from statistics taken while few rows were in that state,
    such a lookup went through the partial index and filtered every row in
    it, a whole backlog for each statement of the worker's, growing with the
    backlog, while the key's own index finds its few rows whatever the
    statistics say (issue 29; docs/benchmarks.md, "A stage with history, and
    a backlog the statistics had not seen"). Use it where the key, not the
    state, narrows the rows."""

    template = "(%(expressions)s) IS TRUE"
    output_field = BooleanField()


class InFirst(Func):
    """`InFirst("endpoint_id", <a queryset of one column>)`: the column is
    among the subquery's values, with the subquery run first, once, on
    PostgreSQL (`endpoint_id = ANY(ARRAY(SELECT ...))`: an init plan, whose
    values the column's index then looks up). Written `IN (SELECT ...)`, the
    planner joins the two instead and may take the other side first: for a
    person's deliveries waiting for their turn, planned from statistics that
    call such rows few (they always are when the table is analysed), it
    walked every endpoint's line for the first row of the person's, thousands
    of another receiver's retries filtered each call (issue 29;
    tests/webhooks/test_turn_plans.py). Elsewhere (SQLite) the plain `IN`."""

    arg_joiner = " IN "
    template = "%(expressions)s"
    output_field = BooleanField()

    def __init__(self, column: str, values: QuerySet[Any]) -> None:
        super().__init__(F(column), Subquery(values))

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(
            compiler, connection, template="%(expressions)s)", arg_joiner=" = ANY(ARRAY", **extra
        )


def row_version() -> RawSQL:
    """The row's version, for `Decide.version`: PostgreSQL's `xmin` (the
    transaction that wrote this version of it). Elsewhere "": SQLite's write
    transactions are serialised (BEGIN IMMEDIATE), so a row read inside one
    cannot change before its write."""
    if connections["default"].vendor == "postgresql":
        return RawSQL("xmin::text", ())
    return RawSQL("''", ())


def write_together(
    *,
    inserts: Sequence[Model] = (),
    updates: Sequence[tuple[Model, Sequence[str]]] = (),
    updates_where: Sequence[tuple[QuerySet[Any], dict[str, Any]]] = (),
    decide: Decide | None = None,
) -> Model | None:
    """Write `updates` (each an instance and the names of the fields to write,
    as `save(update_fields=...)`), `updates_where` (each a queryset and the
    values `queryset.update(**values)` would set, for rows not held as
    instances: those it matches when the statement runs) and `inserts` (new
    instances), in that order where order shows. Inserted instances get their
    database-made primary keys and count as saved.

    With `decide`: first its compare-and-set, and the other writes only if it
    matched a row; returns that row as it is after the update, or None when
    it matched none (`write_decided` says more)."""
    if decide is not None:
        return write_decided(
            decide, inserts=inserts, updates=updates, updates_where=updates_where
        ).row
    rows = [obj for obj, _ in updates] + list(inserts)
    models = [type(obj) for obj in rows] + [qs.model for qs, _ in updates_where]
    if not models:
        return None
    using = router.db_for_write(models[0])
    connection = connections[using]
    if connection.vendor != "postgresql":
        # No savepoint of its own: inside a caller's transaction a failure
        # is the caller's to handle, as with the one statement.
        with transaction.atomic(using=using, savepoint=False):
            for obj, fields in updates:
                obj.save(using=using, update_fields=list(fields))
            for queryset, new_values in updates_where:
                queryset.using(using).update(**new_values)
            for obj in inserts:
                obj.save(using=using, force_insert=True)
        return None

    quote = connection.ops.quote_name
    parts: list[str] = []
    params: list[Any] = []  # Django's compiled values, passed on as they are
    keyed: list[tuple[Model, str]] = []  # inserts whose primary key the database makes
    written = [_update_obj(obj, fields, using) for obj, fields in updates]
    written += [_update_where(qs, new_values, using) for qs, new_values in updates_where]
    written += [_insert(obj, using) for obj in inserts]
    # Only Django's compiled statements, column names and placeholders: no input.
    for part in written:
        if part.keyed is not None:
            column = quote(part.keyed._meta.pk.column)
            keyed.append((part.keyed, f"(SELECT {column} FROM w{len(parts)})"))  # noqa: S608
        parts.append(f"w{len(parts)} AS ({part.text})")
        params.extend(part.params)
    select = ", ".join(column for _, column in keyed) or "1"
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {', '.join(parts)} SELECT {select}", params)
        row = cursor.fetchone()
    for (obj, _), value in zip(keyed, row, strict=False):
        setattr(obj, obj._meta.pk.attname, value)
    for obj in inserts:
        obj._state.adding = False
        obj._state.db = using
    return None


def write_decided(
    decide: Decide | Later,
    *,
    inserts: Sequence[Model] = (),
    updates: Sequence[tuple[Model, Sequence[str]]] = (),
    updates_where: Sequence[tuple[QuerySet[Any], dict[str, Any]]] = (),
) -> Decided:
    """`write_together` with a compare-and-set first (`decide`), saying what
    it did (`Decided`). PostgreSQL: one statement, the update its first CTE
    (`w0`) and every other write gated on it (an INSERT selects its values
    FROM w0, an UPDATE adds `AND EXISTS (SELECT 1 FROM w0)`), so a refused
    update writes nothing; with `Decide.found`, the row it finds is the
    statement's second branch (`UNION ALL ... WHERE NOT EXISTS (SELECT 1 FROM
    w0)`). Elsewhere (SQLite, 3.35+ for RETURNING): the same statements one by
    one in a transaction, the update first (`UPDATE ... RETURNING`), the rest
    only if it returned its row, else the read of `found`. Each statement's
    text is compiled by Django once per shape (`_cached`); with a `Later`,
    the decide's querysets are built once per shape too ("a decide built once
    per shape", below)."""
    if isinstance(decide, Later):
        kept = _later(decide)
        if kept is None:
            built, where = decide.build(*decide.inputs)
            return write_decided(
                built,
                inserts=inserts,
                updates=updates,
                updates_where=[*where, *updates_where],
            )
        model, update, found, leading, marker = kept
        using = router.db_for_write(model)
        parts = [_update_obj(obj, names, using) for obj, names in updates]
        parts += leading
        parts += [_update_where(qs, new_values, using) for qs, new_values in updates_where]
        parts += [_insert(obj, using) for obj in inserts]
        return _decided_postgres(model, update, found, parts, marker, inserts, using)
    model = decide.queryset.model
    using = router.db_for_write(model)
    connection = connections[using]
    postgres = connection.vendor == "postgresql"
    queryset = _with_version(decide) if postgres else decide.queryset
    fields = _columns(model)
    update = _update_where(queryset, decide.values, using)
    parts = []
    for obj, names in updates:
        parts.append(_update_obj(obj, names, using))
    for queryset_where, new_values in updates_where:
        parts.append(_update_where(queryset_where, new_values, using))
    for obj in inserts:
        parts.append(_insert(obj, using))
    found = _select(decide.found, fields, using) if decide.found is not None else None

    if not postgres:
        quote = connection.ops.quote_name
        table = quote(model._meta.db_table)
        returning = ", ".join(f"{table}.{quote(f.column)}" for f in fields)
        with transaction.atomic(using=using, savepoint=False), connection.cursor() as cursor:
            cursor.execute(f"{update.text} RETURNING {returning}", update.params)
            row = cursor.fetchone()
            if row is None:
                if found is None:
                    return Decided(None)
                cursor.execute(found.text, found.params)
                row = cursor.fetchone()
                return Decided(
                    None, _from_row(model, fields, row, connection, using) if row else None
                )
            decided = _from_row(model, fields, row, connection, using)
            for part in parts:
                cursor.execute(part.text, _bound(part.params, decide.marker, decided.pk))
                if part.keyed is not None:
                    (value,) = cursor.fetchone()
                    setattr(part.keyed, part.keyed._meta.pk.attname, value)
        _saved(inserts, using)
        return Decided(decided)

    return _decided_postgres(model, update, found, parts, decide.marker, inserts, using)


def _with_version(decide: Decide) -> QuerySet[Any]:
    """The decide's queryset with its version condition (PostgreSQL)."""
    model = decide.queryset.model
    quote = connections[router.db_for_write(model)].ops.quote_name
    meta = model._meta
    table = quote(meta.db_table)
    # Only column names and a placeholder: no input in the text.
    if decide.version is not None:
        return decide.queryset.extra(where=[f"{table}.xmin::text = %s"], params=[decide.version])  # noqa: S610
    pk = quote(meta.pk.column)
    return decide.queryset.extra(  # noqa: S610
        where=[f"{table}.xmin = (SELECT o.xmin FROM {table} o WHERE o.{pk} = {table}.{pk})"]  # noqa: S608
    )


def _decided_postgres(
    model: type[Model],
    update: _Part,
    found: _Part | None,
    parts: list[_Part],
    marker: Any,
    inserts: Sequence[Model],
    using: str,
) -> Decided:
    """The decided write's one statement on PostgreSQL, run."""
    connection = connections[using]
    fields = _columns(model)
    marked = [_marked(part.params, marker) for part in parts]
    shapes = (update.shape, found.shape if found else (), *(p.shape for p in parts))
    key = None if None in shapes else ("decided", using, tuple(shapes), tuple(marked))
    text = _STATEMENTS.get(key) if key is not None else None
    if text is None:
        text = _decided_text(model, fields, update, parts, marked, found, connection)
        if key is not None and len(_STATEMENTS) < KEPT_AT_MOST:
            _STATEMENTS[key] = text
    params = list(update.params)
    for part, positions in zip(parts, marked, strict=True):
        params.extend(v for i, v in enumerate(part.params) if i not in positions)
    if found is not None:
        params.extend(found.params)
    with connection.cursor() as cursor:
        cursor.execute(text, params)
        row = cursor.fetchone()
    if row is None:
        return Decided(None)
    if not row[0]:  # the row `found` matched: refused
        return Decided(None, _from_row(model, fields, row[1 : len(fields) + 1], connection, using))
    decided = _from_row(model, fields, row[1 : len(fields) + 1], connection, using)
    keys = iter(row[len(fields) + 1 :])
    for part in parts:
        if part.keyed is not None:
            setattr(part.keyed, part.keyed._meta.pk.attname, next(keys))
    _saved(inserts, using)
    return Decided(decided)


def _decided_text(
    model: type[Model],
    fields: list[Any],
    update: _Part,
    parts: list[_Part],
    marked: list[frozenset[int]],
    found: _Part | None,
    connection: Any,
) -> str:
    """The one statement of a decided write on PostgreSQL (see `_write_decided`)."""
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    pk_column = quote(model._meta.pk.column)
    returning = ", ".join(f"{table}.{quote(f.column)}" for f in fields)
    ctes = [f"w0 AS ({update.text} RETURNING {returning})"]
    selects = [f"w0.{quote(f.column)}" for f in fields]
    for part, positions in zip(parts, marked, strict=True):
        name = f"w{len(ctes)}"
        text = _with_marker(part.text, positions, f"(SELECT {pk_column} FROM w0)")  # noqa: S608
        if text.startswith("INSERT"):
            text = _insert_from_w0(text)
        else:
            text = f"{text} AND EXISTS (SELECT 1 FROM w0)"  # noqa: S608
        ctes.append(f"{name} AS ({text})")
        if part.keyed is not None:
            column = quote(part.keyed._meta.pk.column)
            selects.append(f"(SELECT {column} FROM {name})")  # noqa: S608
    # Only Django's compiled statements, column names and placeholders: no input.
    text = f"WITH {', '.join(ctes)} SELECT TRUE, {', '.join(selects)} FROM w0"  # noqa: S608
    if found is not None:  # "SELECT <columns> FROM <table> WHERE <clause>" (`_select`)
        columns, _, rest = found.text.removeprefix("SELECT ").partition(" FROM ")
        source, _, clause = rest.partition(" WHERE ")
        nulls = ", NULL" * (len(selects) - len(fields))
        text += (
            f" UNION ALL SELECT FALSE, {columns}{nulls} FROM {source}"  # noqa: S608
            f" WHERE ({clause}) AND NOT EXISTS (SELECT 1 FROM w0)"
        )
    return text


def _saved(inserts: Sequence[Model], using: str) -> None:
    for obj in inserts:
        obj._state.adding = False
        obj._state.db = using


def _columns(model: type[Model]) -> list[Any]:
    """The columns a decided row is read with: every concrete field but generated ones."""
    return [f for f in model._meta.concrete_fields if not f.generated]


def _from_row(
    model: type[Model], fields: list[Any], row: Sequence[Any], connection: Any, using: str
) -> Model:
    """The instance a `RETURNING` row is, its values converted as a query's are."""
    instance: Model = _row_reader(model, fields, connection, using)(row)
    return instance


def from_rows(
    model: type[Model], rows: Sequence[Sequence[Any]], using: str = "default"
) -> list[Any]:
    """Instances of `model` from rows of its concrete fields' columns (in the
    fields' order; a row may have more columns after them, which are left
    out), their values converted as a query's are: what a raw query's rows
    become without RawQuerySet's work of matching columns by name."""
    read = _row_reader(model, list(model._meta.concrete_fields), connections[using], using)
    return [read(row) for row in rows]


def _row_reader(
    model: type[Model], fields: list[Any], connection: Any, using: str
) -> Callable[[Sequence[Any]], Any]:
    """What makes a row that starts with `fields`' columns into an instance,
    each value converted as a query's is (the converters found once)."""
    table = model._meta.db_table
    convert = []
    for field in fields:
        column = field.get_col(table)
        converters = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        convert.append((column, converters))
    names = [f.attname for f in fields]

    def read(row: Sequence[Any]) -> Any:
        values = []
        for (column, converters), value in zip(convert, row[: len(convert)], strict=True):
            for converter in converters:
                value = converter(value, column, connection)
            values.append(value)
        return model.from_db(using, names, values)

    return read


def _marks(value: Any, marker: Any) -> bool:
    if marker is None:
        return False
    return bool(value == marker or value == str(marker) or value == getattr(marker, "hex", marker))


def _marked(values: Sequence[Any], marker: Any) -> frozenset[int]:
    """The positions of the values that are the marker (as Django prepared it)."""
    if marker is None:
        return frozenset()
    forms = {marker, str(marker), getattr(marker, "hex", marker)}
    return frozenset(i for i, value in enumerate(values) if type(value) in _KEYS and value in forms)


_KEYS = (uuid.UUID, str, int)


def _bound(values: Sequence[Any], marker: Any, pk: Any) -> list[Any]:
    """`values` with the marker (as Django prepared it) replaced by `pk`, prepared alike."""
    out = []
    for value in values:
        if _marks(value, marker):
            value = pk if value == marker else (str(pk) if value == str(marker) else pk.hex)
        out.append(value)
    return out


def _with_marker(text: str, positions: frozenset[int], expression: str) -> str:
    """The placeholders at `positions` replaced by `expression`."""
    if not positions:
        return text
    pieces = text.split("%s")
    out = pieces[0]
    for index, piece in enumerate(pieces[1:]):
        out += (expression if index in positions else "%s") + piece
    return out


def _insert_from_w0(text: str) -> str:
    """`INSERT INTO t (cols) VALUES (...) [RETURNING ...]` as `INSERT INTO t
    (cols) SELECT ... FROM w0 [RETURNING ...]`: a row only if w0 has one."""
    head, _, rest = text.partition(" VALUES (")
    depth, end = 1, 0
    while depth:
        depth += {"(": 1, ")": -1}.get(rest[end], 0)
        end += 1
    return f"{head} SELECT {rest[: end - 1]} FROM w0{rest[end:]}"  # noqa: S608


# --- statements compiled once per shape ------------------------------------------------
#
# Django compiles a statement from its query each time (the WHERE tree, each
# value's placeholder, the quoting), which costs more CPU than the round trip
# of a short statement. A statement's text depends only on its shape (the
# table, the columns written, the lookups and the number of values of an
# IN, which values are NULL), its parameters only on the values: so the text
# is compiled by Django the first time a shape is seen and kept, and each
# later call only prepares its values as Django's compiler would
# (`Field.get_db_prep_save`, a lookup's own `process_rhs`). A shape whose
# parameters, prepared so, are not the ones Django's compile gave is never
# kept (it is compiled every time), nor is one with anything else in it (an
# expression, a join, a custom placeholder). With the setting
# DB_CHECK_STATEMENTS (the tests') every kept text is compared with Django's
# own compile on every call.

_STATEMENTS: dict[Any, str] = {}
_NOT_KEPT: set[Any] = set()
KEPT_AT_MOST = 2000  # shapes: the moves' are a few dozen (an IN's length is in its shape)


@dataclass(frozen=True)
class _Part:
    """One compiled statement: its text, its parameters, its shape (None:
    not kept), and the instance whose database-made key it returns."""

    text: str
    params: list[Any]
    shape: Any
    keyed: Model | None = None


def _checking() -> bool:
    return bool(getattr(settings, "DB_CHECK_STATEMENTS", False))


def _cached(shape: Any, params: list[Any] | None, compile_: Any) -> _Part:
    """The statement of `shape` with `params` (prepared here), or, the first
    time (or with `shape` None), Django's own `compile_()`; kept when its
    parameters are `params`."""
    if shape is None or params is None or shape in _NOT_KEPT:
        text, compiled = compile_()
        return _Part(text, list(compiled), None)
    text = _STATEMENTS.get(shape)
    if text is not None:
        if _checking():
            compiled_text, compiled = compile_()
            assert (compiled_text, _same(params, compiled)) == (text, True), (
                f"A kept statement is not Django's: {text!r} {params!r} against "
                f"{compiled_text!r} {compiled!r}"
            )
        return _Part(text, params, shape)
    text, compiled = compile_()
    if len(_STATEMENTS) >= KEPT_AT_MOST:
        return _Part(text, list(compiled), None)
    if _same(params, compiled):
        _STATEMENTS[shape] = text
        return _Part(text, params, shape)
    _NOT_KEPT.add(shape)  # bounded as _STATEMENTS is (checked above)
    return _Part(text, list(compiled), None)


def _same(mine: Sequence[Any], theirs: Sequence[Any]) -> bool:
    """The same parameters: equal values of the same types (an adapter, as
    psycopg's Jsonb, by the value it wraps)."""
    if len(mine) != len(theirs):
        return False
    for a, b in zip(mine, theirs, strict=True):
        if type(a) is not type(b):
            return False
        if a == b:
            continue
        if not (hasattr(a, "obj") and hasattr(b, "obj") and a.obj == b.obj):
            return False
    return True


def _where(node: Any, compiler: Any, connection: Any) -> tuple[Any, list[Any]] | None:
    """The shape and the parameters of a WHERE tree as the compiler would
    write it, or None for anything but ANDs and ORs of lookups on the
    table's own columns compared with plain values, and `extra()`'s WHERE."""
    if isinstance(node, WhereNode):
        shapes, params = [], []
        for child in node.children:
            found = _where(child, compiler, connection)
            if found is None:
                return None
            shapes.append(found[0])
            params.extend(found[1])
        return (node.connector, node.negated, node.resolved, tuple(shapes)), params
    if isinstance(node, ExtraWhere):
        return ("extra", tuple(node.sqls)), list(node.params or ())
    if (
        not isinstance(node, Lookup)
        or type(node.lhs) is not Col
        or node.bilateral_transforms
        or not node.rhs_is_direct_value()
        or hasattr(node.rhs, "resolve_expression")
        or isinstance(node.rhs, bool)
    ):
        return None
    try:
        rhs_sql, rhs_params = node.process_rhs(compiler, connection)
    except (EmptyResultSet, FullResultSet):
        return None
    column = node.lhs
    shape = (type(node), column.alias, column.target.column, type(column.target), rhs_sql)
    return shape, list(rhs_params)


def _update_shape(query: Any, using: str) -> tuple[Any, list[Any] | None]:
    """An UpdateQuery's shape and parameters, as SQLUpdateCompiler.as_sql
    makes them (Django 5.2), or (None, None)."""
    connection = connections[using]
    if query.related_updates or query.count_active_tables() > 1:
        return None, None
    sets, params = [], []
    for field, _model, value in query.values:
        if hasattr(value, "resolve_expression"):
            return None, None
        if hasattr(value, "prepare_database_save"):
            if not field.remote_field:
                return None, None
            value = value.prepare_database_save(field)
        value = field.get_db_prep_save(value, connection=connection)
        if hasattr(field, "get_placeholder") or hasattr(value, "as_sql"):
            return None, None
        sets.append((field.column, value is None))
        if value is not None:
            params.append(value)
    where = _where(query.where, query.get_compiler(using=using), connection)
    if where is None:
        return None, None
    shape = ("update", using, query.model._meta.db_table, tuple(sets), where[0])
    return shape, params + where[1]


def _compiled_update(query: Any, using: str) -> _Part:
    shape, params = _update_shape(query, using)

    def compile_() -> tuple[str, Sequence[Any]]:
        text, compiled = query.get_compiler(using=using).as_sql()
        return text, compiled

    return _cached(shape, params, compile_)


def _insert(obj: Model, using: str) -> _Part:
    """The INSERT `obj.save(force_insert=True)` would run; `keyed` when it
    returns the primary key (an auto field the database fills)."""
    meta = obj._meta
    connection = connections[using]
    # Model._is_pk_set and Field.get_pk_value_on_save: what Model.save uses
    # (Django 5.2), not in django-stubs.
    if not obj._is_pk_set(meta):  # type: ignore[attr-defined]  # private Django API
        obj.pk = meta.pk.get_pk_value_on_save(obj)  # type: ignore[attr-defined]  # see above
    returns_pk = not obj._is_pk_set(meta)  # type: ignore[attr-defined]  # see above
    fields = [f for f in meta.local_concrete_fields if not f.generated]
    if returns_pk:
        fields = [f for f in fields if f is not meta.auto_field]
    # SQLInsertCompiler's values (pre_save_val, prepare_value), each field's
    # pre_save called once, here: the compile below reads what it set (raw).
    params: list[Any] | None = []
    values = []
    for field in fields:
        value = field.pre_save(obj, add=True)
        values.append(value)
        if params is not None:
            if hasattr(value, "resolve_expression") or hasattr(field, "get_placeholder"):
                params = None
                continue
            prepared = field.get_db_prep_save(value, connection=connection)
            if hasattr(prepared, "as_sql"):
                params = None
                continue
            params.append(prepared)
    raw = all(getattr(obj, f.attname) is v for f, v in zip(fields, values, strict=True))
    shape = ("insert", using, meta.db_table, tuple(f.column for f in fields), returns_pk)

    def compile_() -> tuple[str, Sequence[Any]]:
        query = sql.InsertQuery(type(obj))
        # raw: the values pre_save gave (above), not pre_save again (a
        # second `auto_now_add` stamp).
        query.insert_values(fields, [obj], raw=raw)
        compiler = query.get_compiler(using=using)
        if returns_pk:
            compiler.returning_fields = [meta.pk]
        ((text, compiled),) = compiler.as_sql()
        return text, compiled

    part = _cached(shape if raw else None, params, compile_)
    return _Part(part.text, part.params, part.shape, obj if returns_pk else None)


def _update_obj(obj: Model, names: Sequence[str], using: str) -> _Part:
    """The UPDATE `obj.save(update_fields=names)` would run."""
    meta = obj._meta
    values = []
    for name in names:
        field = meta.get_field(name)
        assert isinstance(field, Field), f"{name} is not a column"  # as save(update_fields=)
        values.append((field, None, field.pre_save(obj, False)))
    query = type(obj)._base_manager.using(using).filter(pk=obj.pk).query.chain(sql.UpdateQuery)
    query.add_update_fields(values)  # type: ignore[attr-defined]  # UpdateQuery's, not in the stubs
    return _compiled_update(query, using)


def _update_where(queryset: QuerySet[Any], values: dict[str, Any], using: str) -> _Part:
    """The UPDATE `queryset.update(**values)` would run."""
    query = queryset.query.chain(sql.UpdateQuery)
    query.add_update_values(values)  # type: ignore[attr-defined]  # UpdateQuery's, not in the stubs
    return _compiled_update(query, using)


def _select(queryset: QuerySet[Any], fields: list[Any], using: str) -> _Part:
    """`SELECT <fields> FROM <table> WHERE <queryset's WHERE>` (the row a
    refused update's `Decide.found` finds)."""
    query = queryset.query
    connection = connections[using]
    quote = connection.ops.quote_name
    table = quote(queryset.model._meta.db_table)
    columns = ", ".join(f"{table}.{quote(f.column)}" for f in fields)
    compiler = query.get_compiler(using=using)
    joined = query.count_active_tables() > 1
    where = None if joined else _where(query.where, compiler, connection)
    shape = None if where is None else ("select", using, table, columns, where[0])

    def compile_() -> tuple[str, Sequence[Any]]:
        if joined:
            raise ValueError("Decide.found: a lookup of the table's own columns")
        clause, params = compiler.compile(query.where)
        return f"SELECT {columns} FROM {table} WHERE {clause}", params  # noqa: S608

    return _cached(shape, where[1] if where else None, compile_)


# --- a read compiled once ---------------------------------------------------------------
#
# The same for a hot read: `Prepared(build)` asks Django to build and compile
# `build(*values)`'s queryset the first time only, keeps its text and what
# makes its rows into instances (the compiler's converters and, for a
# `select_related`, its related populators, as ModelIterable does), and later
# runs the text with the new values. Kept only when the compiled parameters
# are exactly the values given, in order (`_same`), or each is a value or a
# plain constant of the build's own (`Prepared._places`); else every call
# goes through the ORM. With DB_CHECK_STATEMENTS the queryset is built and
# compiled on every call too, and its text and parameters compared.


# The values a Prepared read takes as an IN's (a tuple is a value as it is:
# a range's bounds, say).
_LISTS = (list, set, frozenset)
# The values_list() iterables a Prepared read answers as (named tuples not).
_VALUES: dict[Any, str] = {ValuesListIterable: "tuples", FlatValuesListIterable: "flat"}
# A build's own constants kept in a read's parameters: immutable plain values
# (and their subclasses: psycopg's Int4 of an Exists' 1).
_PLAIN = (bool, int, str, float, uuid.UUID)


def _in_values(values: Any) -> list[Any]:
    """An IN's values as Django's `In` lookup writes them: in their order,
    each once, None left out (a set's order is its iteration's)."""
    return [value for value in dict.fromkeys(values) if value is not None]


def _flat(values: Sequence[Any]) -> list[Any]:
    """A read's parameters: each value, a list's items in its place."""
    flat: list[Any] = []
    for value in values:
        if isinstance(value, list):
            flat.extend(value)
        else:
            flat.append(value)
    return flat


@dataclass(frozen=True)
class _Read:
    using: str
    text: str
    compiler: Any
    converters: dict[int, Any]
    init_list: list[str]
    start: int
    end: int
    populators: list[Any]
    # Each parameter's source, where not every one is a value in order: the
    # index of a value (of the flat list, `_flat`), or a constant of the
    # build's own (`Prepared._places`).
    places: list[tuple[bool, Any]] | None = None
    values: str | None = None  # None: instances; "tuples" or "flat": values_list's


_Row = TypeVar("_Row")


class Prepared(Generic[_Row]):
    """A SELECT whose text is compiled once: `rows(*values)`
    is `list(build(*values))`, without building the queryset again. `build`
    must give the same statement for any values of the same types (lists of
    the same lengths), each value one parameter, in order (e.g. `lambda digest:
    ApiToken.objects.select_related("user").filter(digest=digest)[:1]`); no
    annotations, no `only()`/`defer()`, no `values()`; `values_list()` of
    the model's columns (tuples, or `flat=True`'s values) is kept too.

    A list (or set) is one value for an `__in` lookup: its items
    are the parameters, in its order, after Django's own clean-up of an
    IN's values (duplicates and None left out). The statement is kept per
    length of each list (an IN's length is in its text), like the moves'
    (KEPT_AT_MOST per read); an empty list goes through the ORM (which may
    answer without the database).

    Constants the build writes in itself (a selector's `is_active=True`)
    are kept too, when the build is compiled a second time with stand-ins
    for the values (`_stand_in`, as a `Later`'s) and every other parameter
    is the same plain value both times: then each parameter is known to be
    a value's or the build's own. Anything else is compiled every call."""

    def __init__(self, build: Callable[..., QuerySet[Any, _Row]]) -> None:
        self.build = build
        self._kept: dict[tuple[Any, ...], _Read | None] = {}

    def rows(self, *values: Any) -> list[_Row]:
        return list(self.build(*values))

    def __call__(self, *values: Any) -> list[_Row]:
        values = tuple(_in_values(v) if isinstance(v, _LISTS) else v for v in values)
        key = tuple((list, len(v)) if isinstance(v, list) else type(v) for v in values)
        if any(shape == (list, 0) for shape in key):
            return self.rows(*values)
        if key not in self._kept:
            if len(self._kept) >= KEPT_AT_MOST:
                return self.rows(*values)
            self._kept[key] = self._compile(values)
        kept = self._kept[key]
        if kept is None:
            return self.rows(*values)
        using = kept.using
        params = _flat(values)
        if kept.places is not None:
            params = [params[at] if is_value else at for is_value, at in kept.places]
        if _checking():
            compiler = self.build(*values).query.get_compiler(using=using)
            text, compiled = compiler.as_sql()
            assert (text, _same(params, compiled)) == (kept.text, True), (
                f"A kept read is not Django's: {kept.text!r} {values!r} "
                f"against {text!r} {compiled!r}"
            )
        connection = connections[using]
        with connection.cursor() as cursor:
            cursor.execute(kept.text, params)
            fetched = cursor.fetchall()
        rows: Any = fetched
        if kept.converters:
            rows = kept.compiler.apply_converters(fetched, kept.converters)
        if kept.values == "flat":
            return [row[0] for row in rows]
        if kept.values == "tuples":
            return [tuple(row) for row in rows]  # type: ignore[misc]  # _Row: values_list's tuples
        out = []
        model = kept.compiler.klass_info["model"]
        for row in rows:
            obj = model.from_db(using, kept.init_list, row[kept.start : kept.end])
            for populator in kept.populators:
                populator.populate(row, obj)
            out.append(obj)
        return out

    def _compile(self, values: Sequence[Any]) -> _Read | None:
        queryset: Any = self.build(*values)  # its private attributes are read below
        query = queryset.query
        using = queryset.db
        iterable = queryset._iterable_class
        answer = _VALUES.get(iterable)
        if (
            (iterable is not ModelIterable and answer is None)
            or query.annotations
            or query.extra
            or query.deferred_loading != (frozenset(), True)
            or queryset._prefetch_related_lookups
        ):
            return None
        compiler = query.get_compiler(using=using)
        text, params = compiler.as_sql()
        if compiler.annotation_col_map and answer is None:
            # (values_list's columns are selected by name: no annotation.)
            return None
        places = None
        if not _same(_flat(values), params):
            places = self._places(values, text, list(params), using)
            if places is None:
                return None
        select, klass_info = compiler.select, compiler.klass_info
        fields = [s[0] for s in select[: compiler.col_count]]
        if answer is not None:
            # As `results_iter` reads them (no composite key among them).
            if compiler.has_composite_fields(fields):
                return None
            converters = compiler.get_converters(fields)
            return _Read(
                using=using,
                text=text,
                compiler=compiler,
                converters=converters,
                init_list=[],
                start=0,
                end=0,
                populators=[],
                places=places,
                values=answer,
            )
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        return _Read(
            using=using,
            text=text,
            compiler=compiler,
            converters=compiler.get_converters(fields),
            init_list=[f[0].target.attname for f in select[start:end]],
            start=start,
            end=end,
            populators=get_related_populators(klass_info, select, using),
            places=places,
        )

    def _places(
        self, values: Sequence[Any], text: str, params: list[Any], using: str
    ) -> list[tuple[bool, Any]] | None:
        """Where each of `params` (the build's, compiled with `values`) comes
        from: a value (its index in `_flat(values)`) or the build itself (a
        plain constant, the same when compiled with stand-ins); None when
        any is neither, or the text is not the same."""
        flat = _flat(values)
        stand_ins = [
            [_stand_in(v) for v in value] if isinstance(value, list) else _stand_in(value)
            for value in values
        ]
        flat_stand_ins = _flat(stand_ins)
        if any(s is None for s in flat_stand_ins):
            return None
        try:
            other = self.build(*stand_ins).query.get_compiler(using=using)
            other_text, other_params = other.as_sql()
        except (EmptyResultSet, FullResultSet, ValidationError):
            return None
        if other_text != text or len(other_params) != len(params):
            return None
        places: list[tuple[bool, Any]] = []
        for mine, theirs in zip(params, other_params, strict=True):
            at = next((i for i, s in enumerate(flat_stand_ins) if _same([s], [theirs])), None)
            if at is not None and _same([flat[at]], [mine]):
                places.append((True, at))
            elif isinstance(mine, _PLAIN) and _same([mine], [theirs]):
                places.append((False, mine))
            else:
                return None
        return places


# --- a decide built once per shape ------------------------------------------------------
#
# A `Later`'s querysets are built the first time a shape is seen with
# stand-ins for its inputs, values of the same types that nothing else can
# equal (`_stand_in`: a fresh UUID in each), and compiled (the decide's
# UPDATE, its `found` SELECT, its `updates_where`); where each stand-in landed
# among their parameters is noted. A shape where any parameter is not
# exactly one stand-in (a value the build made itself, or prepared into
# another) is never kept. Later writes of the shape take the kept texts and
# put their own inputs at the noted places. With DB_CHECK_STATEMENTS each
# write also builds its querysets from its inputs and compares.


@dataclass(frozen=True)
class _LaterKept:
    model: type[Model]
    # text, shape, inputs' places (each an input's index and the subclass
    # of its type the field's preparation wraps it in, or None), keyed
    parts: list[tuple[str, Any, list[tuple[int, Any]], Model | None]]
    found: bool
    marker: int | None  # the input that is Decide.marker


_LATER: dict[Any, _LaterKept | None] = {}


def _stand_in(value: Any) -> Any:
    """A value of `value`'s type that no other can equal, or None."""
    kind = type(value)
    if kind is str:
        return f"lib.db:{uuid.uuid4().hex}"
    if kind is int:
        # Negative, within an IntegerField's range (Django refuses to compare
        # with a value out of a column's range: EmptyResultSet, below).
        return -(2**30) - uuid.uuid4().int % 2**30
    if kind is uuid.UUID:
        return uuid.uuid4()
    if kind is dt.datetime and value.tzinfo is not None:
        return dt.datetime(1901, 1, 1, tzinfo=value.tzinfo) + dt.timedelta(
            microseconds=uuid.uuid4().int % 10**15
        )
    return None


def _later_parts(
    decide: Decide, where: Sequence[tuple[QuerySet[Any], dict[str, Any]]], using: str
) -> list[_Part | None]:
    """The decide's UPDATE, its found SELECT (or None), its updates_where."""
    fields = _columns(decide.queryset.model)
    update = _update_where(_with_version(decide), decide.values, using)
    found = _select(decide.found, fields, using) if decide.found is not None else None
    return [update, found, *(_update_where(qs, values, using) for qs, values in where)]


def _later(
    later: Later,
) -> tuple[type[Model], _Part, _Part | None, list[_Part], Any] | None:
    """The kept parts of `later`'s shape with its inputs in place (None:
    not PostgreSQL, or a shape not kept: built as a Decide)."""
    inputs = later.inputs
    key = (later.key, tuple(type(v) for v in inputs))
    if key not in _LATER:
        if len(_LATER) >= KEPT_AT_MOST:
            return None
        _LATER[key] = _later_keep(later)
    kept = _LATER[key]
    if kept is None:
        return None
    using = router.db_for_write(kept.model)
    parts = [
        None if text is None else _Part(text, [_place(inputs, at) for at in places], shape, keyed)
        for text, shape, places, keyed in kept.parts
    ]
    if _checking():
        decide, where = later.build(*inputs)
        own = _later_parts(decide, where, using)
        for mine, theirs in zip(parts, own, strict=True):
            assert (mine is None) == (theirs is None)
            if mine is not None and theirs is not None:
                assert (mine.text, _same(mine.params, theirs.params)) == (theirs.text, True), (
                    f"A kept decide is not Django's: {mine!r} against {theirs!r}"
                )
    update, found, *leading = parts
    assert update is not None  # the decide's UPDATE is always there
    marker = None if kept.marker is None else inputs[kept.marker]
    return kept.model, update, found, [p for p in leading if p is not None], marker


def _place(inputs: tuple[Any, ...], at: tuple[int, Any]) -> Any:
    """The input at a kept place, wrapped as the field's preparation wraps it."""
    index, wrap = at
    return inputs[index] if wrap is None else wrap(inputs[index])


def _later_keep(later: Later) -> _LaterKept | None:
    stand_ins = [_stand_in(v) for v in later.inputs]
    if any(s is None for s in stand_ins):
        return None
    decide, where = later.build(*stand_ins)
    model = decide.queryset.model
    using = router.db_for_write(model)
    if connections[using].vendor != "postgresql":
        return None
    try:
        parts = _later_parts(decide, where, using)
    except (EmptyResultSet, FullResultSet, ValidationError):
        return None  # a stand-in a column refuses (a small integer's range): built each time
    kept: list[tuple[str, Any, list[tuple[int, Any]], Model | None]] = []
    for part in parts:
        if part is None:
            kept.append((None, None, [], None))  # type: ignore[arg-type]  # no found
            continue
        if part.shape is None:
            return None
        places = []
        for value in part.params:
            # The stand-in itself, or wrapped by the field's preparation in a
            # subclass of its type (psycopg's `Int4` for an IntegerField):
            # the input is wrapped alike (`_place`).
            found = [
                i for i, s in enumerate(stand_ins) if isinstance(value, type(s)) and s == value
            ]
            if len(found) != 1:
                return None
            wrap = type(value)
            places.append((found[0], None if wrap is type(stand_ins[found[0]]) else wrap))
        kept.append((part.text, part.shape, places, part.keyed))
    marker = None
    if decide.marker is not None:
        at = [i for i, s in enumerate(stand_ins) if s is decide.marker]
        if len(at) != 1:
            return None
        marker = at[0]
    return _LaterKept(model, kept, decide.found is not None, marker)
