"""Admin for the audit trail: read-only, searchable, filterable.

Audit events are append-only (the model and, on PostgreSQL, a trigger refuse
changes), so the admin offers no add, change or delete at all.
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet, Subquery
from django.db.models.functions import Lower
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from audit.admin_mixins import AuditedAdminMixin
from audit.models import AuditAction, AuditEvent
from lib.admin import CappedCountPaginator, ExactUuidSearchMixin, ReadOnlyAdminMixin

# What the search box reads a term as (AuditEventAdmin.get_search_results).
# An e-mail address: something, "@", something, no spaces.
EMAIL_SHAPE = re.compile(r"[^@\s]+@[^@\s]+")
# An API token's display prefix: integrations.tokens' TOKEN_TYPE and the
# first 8 base62 characters (DISPLAY_PREFIX_LENGTH). Written out here because
# audit sits below integrations; tests/audit/test_admin_search.py holds the
# two together.
TOKEN_PREFIX_SHAPE = re.compile(r"svc_[0-9A-Za-z]{8}")
# Other text is looked for among this many of the newest events listed.
RECENT_EVENTS = 10_000


class ActionFilter(admin.SimpleListFilter):
    """By action, from the list of actions (AuditAction): the admin's own
    filter for a plain field lists the values found, a SELECT DISTINCT over
    the whole trail on every look (seconds at millions of rows)."""

    title = "action"
    parameter_name = "action"

    def lookups(self, request, model_admin):
        return [(action.value, action.value) for action in AuditAction]

    def queryset(self, request, queryset):
        return queryset.filter(action=self.value()) if self.value() else queryset


class SignInMethodFilter(admin.SimpleListFilter):
    """Sign-ins by how they were made (the payload's `method`,
    audit.receivers.sign_in_how)."""

    title = "signed in with"
    parameter_name = "sign_in_method"

    def lookups(self, request, model_admin):
        return [("password", "Password"), ("passkey", "Passkey"), ("sso", "SSO provider")]

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(payload__method=self.value())
        return queryset


class SecondFactorFilter(admin.SimpleListFilter):
    """Sign-ins by the second factor given (the payload's `second_factor`)."""

    title = "second factor"
    parameter_name = "second_factor"

    def lookups(self, request, model_admin):
        return [
            ("totp", "Authenticator app"),
            ("webauthn", "Security key"),
            ("recovery_codes", "Recovery code"),
            ("none", "None"),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "none":
            return queryset.filter(payload__has_key="second_factor", payload__second_factor=None)
        if value:
            return queryset.filter(payload__second_factor=value)
        return queryset


@admin.register(AuditEvent)
class AuditEventAdmin(
    AuditedAdminMixin, ExactUuidSearchMixin, ReadOnlyAdminMixin, admin.ModelAdmin
):
    uuid_search_fields = ("subject_id", "token_id", "pk")
    list_display = (
        "occurred_at",
        "action",
        "actor_kind",
        "user",
        "token_prefix",
        "subject_link",
    )
    list_filter = (
        "actor_kind",
        ActionFilter,
        SignInMethodFilter,
        SecondFactorFilter,
        "occurred_at",
    )
    list_select_related = ("user", "subject_type")
    # The fields the search reads; how is get_search_results' (each kind of
    # term through an index, at any size of the trail).
    search_fields = ("user__email", "token_prefix", "token_name")
    search_help_text = (
        "A commitment (subject), token or event id; a person's whole e-mail address"
        " (any case): what they and their tokens did; a token's prefix (svc_ and 8"
        " characters). Other text: token names and e-mail addresses containing it,"
        f" among the newest {RECENT_EVENTS:,} events listed."
    )
    # No date hierarchy: its links are made by a SELECT DISTINCT over the
    # dates of every row shown (the whole trail at first). The occurred_at
    # filter (today, the past 7 days, this month, this year) asks nothing.
    ordering = ("-occurred_at", "-id")
    # Counting millions of rows on every look is what made the list slow at
    # scale: counted up to a cap, and the unfiltered total never.
    paginator = CappedCountPaginator
    show_full_result_count = False
    fields = (
        "id",
        "occurred_at",
        "actor_kind",
        "user",
        "token_id",
        "token_prefix",
        "token_name",
        "subject_type",
        "subject_link",
        "action",
        "payload",
    )
    readonly_fields = fields

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """A term is matched by what it looks like, each kind through an index
        (the admin's own search, icontains across a join, read all five
        million rows of benchmarks/scale.py: 22 s):

        - a UUID: the subject, token or event id (ExactUuidSearchMixin);
        - an e-mail address: the events of the user whose address it is, any
          case (`user_id = (SELECT id FROM users WHERE lower(email) = ...)`,
          the users' unique index on lower(email), then the newest of their
          events off audit_user_time_idx); a part of an address finds nothing
          here, but as other text below;
        - a token's prefix: token_prefix exactly (audit_token_prefix_time_idx);
        - other text: token names and actors' e-mail addresses containing it
          (any case), among the newest RECENT_EVENTS of the events listed (the
          filters chosen): their time is looked up first, so the scan is a
          range of the occurred_at index of about that many rows.
        """
        term = search_term.strip()
        if not term:
            return queryset, False
        by_id = self.uuid_search(queryset, term)
        if by_id is not None:
            return by_id, False
        if EMAIL_SHAPE.fullmatch(term):
            users = get_user_model()._default_manager.alias(email_lower=Lower("email"))
            actor = users.filter(email_lower=term.lower()).order_by().values("pk")
            return queryset.filter(user=Subquery(actor)), False
        if TOKEN_PREFIX_SHAPE.fullmatch(term):
            return queryset.filter(token_prefix=term), False
        # A bound given as a value, not a subquery: with a value the planner
        # knows the range is small and reads it off an index; with a subquery
        # it guessed a third of the table and scanned it (benchmarks/scale.py).
        newest = queryset.order_by("-occurred_at", "-id").values_list("occurred_at", flat=True)
        oldest_recent = list(newest[RECENT_EVENTS - 1 : RECENT_EVENTS])
        if oldest_recent:
            queryset = queryset.filter(occurred_at__gte=oldest_recent[0])
        return queryset.filter(
            Q(token_name__icontains=term) | Q(user__email__icontains=term)
        ), False

    @admin.display(description="subject", ordering="subject_id")
    def subject_link(self, obj: AuditEvent) -> str:
        ct = obj.subject_type
        short = str(obj.subject_id)[:8] + "…"
        try:
            url = reverse(f"admin:{ct.app_label}_{ct.model}_change", args=[obj.subject_id])
        except NoReverseMatch:
            return format_html('{} <span title="{}">{}</span>', ct.model, obj.subject_id, short)
        return format_html(
            '<a href="{}" title="{}">{} {}</a>', url, obj.subject_id, ct.model, short
        )
