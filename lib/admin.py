"""Building blocks shared by the apps' admin classes."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.paginator import Paginator
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property


class ReadOnlyAdminMixin:
    """Staff may look, not touch: rows change only through the services, which
    write the audit trail (or, for the audit trail itself, never)."""

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class ReadOnlyInlineMixin(ReadOnlyAdminMixin):
    extra = 0
    can_delete = False
    show_change_link = False


class ExactUuidSearchMixin:
    """A search term that is a UUID also matches `uuid_search_fields` exactly
    (UUIDs cannot be searched with the icontains lookups of search_fields)."""

    uuid_search_fields: tuple[str, ...] = ("pk",)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        results, may_have_duplicates = super().get_search_results(  # type: ignore[misc]
            request, queryset, search_term
        )
        try:
            term = uuid.UUID(search_term.strip())
        except ValueError:
            return results, may_have_duplicates
        # A UUID is looked up by the indexed id columns alone: matching it
        # against the text fields too (icontains) read the whole table, which
        # at millions of audit rows took seconds (benchmarks/scale.py), and
        # an id is never part of an address or a token's prefix.
        matches = Q()
        for field in self.uuid_search_fields:
            matches |= Q(**{field: term})
        return queryset.filter(matches), False


class CappedCountPaginator(Paginator):  # type: ignore[type-arg]  # not generic at run time
    """The admin's paginator for a table of millions of rows: it counts at
    most COUNT_CAP of them (a count that stops reading there), so a list,
    filtered or not, costs the same at any size; a list that reaches the cap
    shows the cap as its count and pages as far as it. With the admin's
    `show_full_result_count = False`, no other count is made."""

    COUNT_CAP = 10_000

    @cached_property
    def count(self) -> int:
        rows: QuerySet[Any] = self.object_list  # type: ignore[assignment]  # the admin's
        return rows[: self.COUNT_CAP].count()
