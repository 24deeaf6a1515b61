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
    """A search term that is a UUID matches `uuid_search_fields` exactly, and
    nothing else (UUIDs cannot be searched with the icontains lookups of
    search_fields); any other term goes to the admin's own search."""

    uuid_search_fields: tuple[str, ...] = ("pk",)

    def uuid_search(self, queryset: QuerySet[Any], search_term: str) -> QuerySet[Any] | None:
        """The rows whose `uuid_search_fields` equal the term, or None when the
        term is not a UUID."""
        try:
            term = uuid.UUID(search_term.strip())
        except ValueError:
            return None
        # A UUID is looked up by the indexed id columns alone: matching it
        # against the text fields too (icontains) read the whole table, which
        # at millions of audit rows took seconds (benchmarks/scale.py), and
        # an id is never part of an address or a token's prefix.
        matches = Q()
        for field in self.uuid_search_fields:
            matches |= Q(**{field: term})
        return queryset.filter(matches)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        by_id = self.uuid_search(queryset, search_term)
        if by_id is not None:
            return by_id, False
        return super().get_search_results(  # type: ignore[misc,no-any-return]
            request, queryset, search_term
        )


class CappedCountPaginator(Paginator):  # type: ignore[type-arg]  # not generic at run time
    """The admin's paginator for a table of millions of rows: it counts at
    most COUNT_CAP of them (a count that stops reading there), so a list,
    filtered or not, costs the same at any size; a list that reaches the cap
    pages as far as it, and says "10,000 or more" where the admin shows the
    count (`count_label`, read by the templates of the admin using it). With
    the admin's `show_full_result_count = False`, no other count is made."""

    COUNT_CAP = 10_000

    @cached_property
    def count(self) -> int:
        rows: QuerySet[Any] = self.object_list  # type: ignore[assignment]  # the admin's
        return rows[: self.COUNT_CAP].count()

    @property
    def count_is_capped(self) -> bool:
        """True when the rows were counted up to the cap: there may be more."""
        return self.count >= self.COUNT_CAP

    @property
    def count_label(self) -> str:
        """The count as the admin shows it: "10,000 or more" at the cap."""
        if self.count_is_capped:
            return f"{self.COUNT_CAP:,} or more"
        return f"{self.count:,}"
