"""Building blocks shared by the apps' admin classes."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Q, QuerySet
from django.http import HttpRequest


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
        matches = Q()
        for field in self.uuid_search_fields:
            matches |= Q(**{field: term})
        return queryset.filter(matches | Q(pk__in=results.values("pk"))), False
