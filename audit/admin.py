"""Admin for the audit trail: read-only, searchable, filterable.

Audit events are append-only (the model and, on PostgreSQL, a trigger refuse
changes), so the admin offers no add, change or delete at all.
"""

from __future__ import annotations

from django.contrib import admin
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from audit.admin_mixins import AuditedAdminMixin
from audit.models import AuditAction, AuditEvent
from lib.admin import CappedCountPaginator, ExactUuidSearchMixin, ReadOnlyAdminMixin


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
    # A UUID term (subject, token or event id) is matched exactly in get_search_results.
    search_fields = ("user__email", "token_prefix", "token_name")
    search_help_text = "Commitment (subject) id, a user's e-mail, a token prefix, name or id."
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
