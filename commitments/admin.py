"""Admin for commitments: a read-only window for staff.

Statuses move only through `commitments.services` (one path, always audited),
so the admin neither adds, changes nor deletes commitments; the audit trail
and the outbox rows of each one are shown inline, read-only.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.contenttypes.admin import GenericTabularInline

from audit.admin_mixins import AuditedAdminMixin
from audit.models import AuditEvent
from commitments.models import Commitment, Invitation, OutboxEvent
from lib.admin import ExactUuidSearchMixin, ReadOnlyAdminMixin, ReadOnlyInlineMixin


class AuditEventInline(ReadOnlyInlineMixin, GenericTabularInline):
    model = AuditEvent
    ct_field = "subject_type"
    ct_fk_field = "subject_id"
    fields = ("occurred_at", "action", "actor_kind", "user", "token_prefix", "payload")
    readonly_fields = fields
    ordering = ("occurred_at", "id")
    verbose_name = "audit event"
    verbose_name_plural = "Audit trail"


class OutboxEventInline(ReadOnlyInlineMixin, admin.TabularInline):
    model = OutboxEvent
    fields = (
        "kind",
        "previous_status",
        "new_status",
        "occurred_at",
        "actor_kind",
        "actor_user",
        "actor_token_id",
        "dispatched_at",
        "dispatch_attempts",
        "next_attempt_at",
    )
    readonly_fields = fields
    verbose_name_plural = "Outbox events"


@admin.register(Commitment)
class CommitmentAdmin(
    AuditedAdminMixin, ExactUuidSearchMixin, ReadOnlyAdminMixin, admin.ModelAdmin
):
    list_display = (
        "short_description",
        "status",
        "assigner",
        "assignee",
        "deadline",
        "external_ref",
        "created_at",
    )
    list_filter = ("status",)
    list_select_related = ("assigner", "assignee", "invitation")
    # The id is matched exactly in get_search_results (a UUIDField cannot
    # take a partial or non-UUID term).
    search_fields = (
        "description",
        "external_id",
        "assigner__email",
        "assignee__email",
        "invitation__email",
    )
    search_help_text = (
        "Commitment id, description, external id, or an assigner's, assignee's or invited e-mail."
    )
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    inlines = (AuditEventInline, OutboxEventInline)
    fieldsets = (
        (None, {"fields": ("id", "status", "description", "raw_text", "deadline")}),
        ("People", {"fields": ("assigner", "assignee", "invitation")}),
        ("External reference", {"fields": ("external_system", "external_id")}),
        (
            "Times",
            {
                "fields": (
                    "created_at",
                    "updated_at",
                    "activated_at",
                    "completed_at",
                    "refused_at",
                    "renegotiated_at",
                )
            },
        ),
    )

    @admin.display(description="description", ordering="description")
    def short_description(self, obj: Commitment) -> str:
        return obj.description if len(obj.description) <= 80 else obj.description[:79] + "…"

    @admin.display(description="external ref", ordering="external_system")
    def external_ref(self, obj: Commitment) -> str:
        if not obj.has_external_ref:
            return "—"
        return f"{obj.external_system}:{obj.external_id}"


@admin.register(Invitation)
class InvitationAdmin(AuditedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Addresses asked before they had an account, and who claimed them."""

    list_display = ("email", "created_at", "claimed_by", "claimed_at")
    list_select_related = ("claimed_by",)
    search_fields = ("email",)
    ordering = ("-created_at",)
