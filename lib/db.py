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
from typing import Any

from django.db import connections, router, transaction
from django.db.models import Field, Model, QuerySet, sql


def write_together(
    *,
    inserts: Sequence[Model] = (),
    updates: Sequence[tuple[Model, Sequence[str]]] = (),
    updates_where: Sequence[tuple[QuerySet[Any], dict[str, Any]]] = (),
) -> None:
    """Write `updates` (each an instance and the names of the fields to write,
    as `save(update_fields=...)`), `updates_where` (each a queryset and the
    values `queryset.update(**values)` would set, for rows not held as
    instances: those it matches when the statement runs) and `inserts` (new
    instances), in that order where order shows. Inserted instances get their
    database-made primary keys and count as saved."""
    rows = [obj for obj, _ in updates] + list(inserts)
    models = [type(obj) for obj in rows] + [qs.model for qs, _ in updates_where]
    if not models:
        return
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
        return

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
