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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connections, router, transaction
from django.db.models import Field, Model, QuerySet, sql
from django.db.models.expressions import RawSQL


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
    key the update returns."""

    queryset: QuerySet[Any]
    values: dict[str, Any]
    version: str | None = None
    marker: Any = None


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
    matched a row; returns that row as it is after the update (all its
    fields, from `UPDATE ... RETURNING`), or None when it matched none (and
    nothing was written)."""
    if decide is not None:
        return _write_decided(decide, inserts=inserts, updates=updates, updates_where=updates_where)
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
    for obj, fields in updates:
        text, values = _update_sql(obj, fields, using)
        parts.append(f"w{len(parts)} AS ({text})")
        params.extend(values)
    for queryset, new_values in updates_where:
        text, values = _update_where_sql(queryset, new_values, using)
        parts.append(f"w{len(parts)} AS ({text})")
        params.extend(values)
    # Only Django's compiled statements, column names and placeholders: no input.
    for obj in inserts:
        text, values, returns_pk = _insert_sql(obj, using)
        if returns_pk:
            column = quote(obj._meta.pk.column)
            keyed.append((obj, f"(SELECT {column} FROM w{len(parts)})"))  # noqa: S608
        parts.append(f"w{len(parts)} AS ({text})")
        params.extend(values)
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


def _write_decided(
    decide: Decide,
    *,
    inserts: Sequence[Model],
    updates: Sequence[tuple[Model, Sequence[str]]],
    updates_where: Sequence[tuple[QuerySet[Any], dict[str, Any]]],
) -> Model | None:
    """`write_together` with a compare-and-set first. PostgreSQL: one
    statement, the update its first CTE (`w0`) and every other write gated on
    it (an INSERT selects its values FROM w0, an UPDATE adds `AND EXISTS
    (SELECT 1 FROM w0)`), so a refused update writes nothing. Elsewhere
    (SQLite, 3.35+ for RETURNING): the same statements one by one in a
    transaction, the update first (`UPDATE ... RETURNING`), the rest only
    if it returned its row."""
    model = decide.queryset.model
    using = router.db_for_write(model)
    connection = connections[using]
    postgres = connection.vendor == "postgresql"
    meta = model._meta
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    queryset = decide.queryset
    if postgres:
        # Only column names and a placeholder: no input in the text.
        if decide.version is not None:
            queryset = queryset.extra(where=[f"{table}.xmin::text = %s"], params=[decide.version])  # noqa: S610
        else:
            pk = quote(meta.pk.column)
            queryset = queryset.extra(  # noqa: S610
                where=[
                    f"{table}.xmin = (SELECT o.xmin FROM {table} o WHERE o.{pk} = {table}.{pk})"  # noqa: S608
                ]
            )
    text, params = _update_where_sql(queryset, decide.values, using)
    fields = [f for f in meta.concrete_fields if not f.generated]
    returning = ", ".join(f"{table}.{quote(f.column)}" for f in fields)
    decisive: tuple[str, list[Any]] = (f"{text} RETURNING {returning}", list(params))
    dependent: list[tuple[str, list[Any], Model | None]] = []
    for obj, names in updates:
        text, values = _update_sql(obj, names, using)
        dependent.append((text, list(values), None))
    for queryset_where, new_values in updates_where:
        text, values = _update_where_sql(queryset_where, new_values, using)
        dependent.append((text, list(values), None))
    for obj in inserts:
        text, values, returns_pk = _insert_sql(obj, using)
        dependent.append((text, list(values), obj if returns_pk else None))

    if not postgres:
        with transaction.atomic(using=using, savepoint=False), connection.cursor() as cursor:
            cursor.execute(decisive[0], decisive[1])
            row = cursor.fetchone()
            if row is None:
                return None
            decided = _from_row(model, fields, row, connection, using)
            for text, values, keyed in dependent:
                cursor.execute(text, _bound(values, decide.marker, decided.pk))
                if keyed is not None:
                    (value,) = cursor.fetchone()
                    setattr(keyed, keyed._meta.pk.attname, value)
        _saved(inserts, using)
        return decided

    pk_column = quote(meta.pk.column)
    parts = [f"w0 AS ({decisive[0]})"]
    all_params: list[Any] = list(decisive[1])
    selects = [f"w0.{quote(f.column)}" for f in fields]
    for text, values, keyed in dependent:
        name = f"w{len(parts)}"
        text, values = _with_marker(text, values, decide.marker, f"(SELECT {pk_column} FROM w0)")  # noqa: S608
        if text.startswith("INSERT"):
            text = _insert_from_w0(text)
        else:
            text = f"{text} AND EXISTS (SELECT 1 FROM w0)"  # noqa: S608
        parts.append(f"{name} AS ({text})")
        all_params.extend(values)
        if keyed is not None:
            column = quote(keyed._meta.pk.column)
            selects.append(f"(SELECT {column} FROM {name})")  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {', '.join(parts)} SELECT {', '.join(selects)} FROM w0", all_params)  # noqa: S608
        row = cursor.fetchone()
    if row is None:
        return None
    decided = _from_row(model, fields, row[: len(fields)], connection, using)
    keys = iter(row[len(fields) :])
    for _, _, keyed in dependent:
        if keyed is not None:
            setattr(keyed, keyed._meta.pk.attname, next(keys))
    _saved(inserts, using)
    return decided


def _saved(inserts: Sequence[Model], using: str) -> None:
    for obj in inserts:
        obj._state.adding = False
        obj._state.db = using


def _from_row(
    model: type[Model], fields: list[Any], row: Sequence[Any], connection: Any, using: str
) -> Model:
    """The instance a `RETURNING` row is, its values converted as a query's are."""
    values = []
    for field, value in zip(fields, row, strict=True):
        column = field.get_col(model._meta.db_table)
        converters = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        for convert in converters:
            value = convert(value, column, connection)
        values.append(value)
    instance: Model = model.from_db(using, [f.attname for f in fields], values)
    return instance


def _marks(value: Any, marker: Any) -> bool:
    if marker is None:
        return False
    return bool(value == marker or value == str(marker) or value == getattr(marker, "hex", marker))


def _bound(values: list[Any], marker: Any, pk: Any) -> list[Any]:
    """`values` with the marker (as Django prepared it) replaced by `pk`, prepared alike."""
    out = []
    for value in values:
        if _marks(value, marker):
            value = pk if value == marker else (str(pk) if value == str(marker) else pk.hex)
        out.append(value)
    return out


def _with_marker(
    text: str, values: list[Any], marker: Any, expression: str
) -> tuple[str, list[Any]]:
    """Each placeholder whose value is the marker replaced by `expression`."""
    if marker is None or not any(_marks(v, marker) for v in values):
        return text, values
    pieces = text.split("%s")
    assert len(pieces) == len(values) + 1, "one placeholder a value"
    out_text, out_values = pieces[0], []
    for value, piece in zip(values, pieces[1:], strict=True):
        if _marks(value, marker):
            out_text += expression + piece
        else:
            out_text += "%s" + piece
            out_values.append(value)
    return out_text, out_values


def _insert_from_w0(text: str) -> str:
    """`INSERT INTO t (cols) VALUES (...) [RETURNING ...]` as `INSERT INTO t
    (cols) SELECT ... FROM w0 [RETURNING ...]`: a row only if w0 has one."""
    head, _, rest = text.partition(" VALUES (")
    depth, end = 1, 0
    while depth:
        depth += {"(": 1, ")": -1}.get(rest[end], 0)
        end += 1
    return f"{head} SELECT {rest[: end - 1]} FROM w0{rest[end:]}"  # noqa: S608


def _insert_sql(obj: Model, using: str) -> tuple[str, Sequence[object], bool]:
    """The INSERT `obj.save(force_insert=True)` would run, and whether it
    returns the primary key (an auto field the database fills)."""
    meta = obj._meta
    # Model._is_pk_set and Field.get_pk_value_on_save: what Model.save uses
    # (Django 5.2), not in django-stubs.
    if not obj._is_pk_set(meta):  # type: ignore[attr-defined]  # private Django API
        obj.pk = meta.pk.get_pk_value_on_save(obj)  # type: ignore[attr-defined]  # see above
    returns_pk = not obj._is_pk_set(meta)  # type: ignore[attr-defined]  # see above
    fields = [f for f in meta.local_concrete_fields if not f.generated]
    if returns_pk:
        fields = [f for f in fields if f is not meta.auto_field]
    query = sql.InsertQuery(type(obj))
    query.insert_values(fields, [obj], raw=False)
    compiler = query.get_compiler(using=using)
    if returns_pk:
        compiler.returning_fields = [meta.pk]
    ((text, values),) = compiler.as_sql()
    return text, values, returns_pk


def _update_sql(obj: Model, names: Sequence[str], using: str) -> tuple[str, Sequence[object]]:
    """The UPDATE `obj.save(update_fields=names)` would run."""
    meta = obj._meta
    values = []
    for name in names:
        field = meta.get_field(name)
        assert isinstance(field, Field), f"{name} is not a column"  # as save(update_fields=)
        values.append((field, None, field.pre_save(obj, False)))
    query = type(obj)._base_manager.using(using).filter(pk=obj.pk).query.chain(sql.UpdateQuery)
    query.add_update_fields(values)  # type: ignore[attr-defined]  # UpdateQuery's, not in the stubs
    text, params = query.get_compiler(using=using).as_sql()
    return text, params


def _update_where_sql(
    queryset: QuerySet[Any], values: dict[str, Any], using: str
) -> tuple[str, Sequence[object]]:
    """The UPDATE `queryset.update(**values)` would run."""
    query = queryset.query.chain(sql.UpdateQuery)
    query.add_update_values(values)  # type: ignore[attr-defined]  # UpdateQuery's, not in the stubs
    text, params = query.get_compiler(using=using).as_sql()
    return text, params
