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
from commitments.models import Comment, Commitment, Invitation, OutboxEvent, Proposal
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
        "detail",
        "actor_kind",
        "actor_user",
        "actor_token_id",
        "dispatched_at",
        "dispatch_attempts",
        "next_attempt_at",
    )
    readonly_fields = fields
    verbose_name_plural = "Outbox events"


class ProposalInline(ReadOnlyInlineMixin, admin.TabularInline):
    model = Proposal
    fields = (
        "created_at",
        "kind",
        "state",
        "proposed_by",
        "deadline",
        "description",
        "note",
        "answered_at",
        "answered_by",
        "answer_note",
    )
    readonly_fields = fields
    show_change_link = True


class CommentInline(ReadOnlyInlineMixin, admin.TabularInline):
    model = Comment
    fields = ("created_at", "author", "body")
    readonly_fields = fields
    show_change_link = True


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
    inlines = (ProposalInline, CommentInline, AuditEventInline, OutboxEventInline)
    fieldsets = (
        (None, {"fields": ("id", "status", "description", "raw_text", "deadline")}),
        ("People", {"fields": ("assigner", "assignee", "invitation")}),
        ("Terms", {"fields": ("terms_version",)}),
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
                    "withdrawn_at",
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


@admin.register(Proposal)
class ProposalAdmin(AuditedAdminMixin, ExactUuidSearchMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Counter-proposals and requests for more time, and their answers."""

    list_display = (
        "commitment",
        "kind",
        "state",
        "proposed_by",
        "deadline",
        "created_at",
        "answered_at",
    )
    list_filter = ("kind", "state")
    list_select_related = ("commitment", "proposed_by")
    uuid_search_fields = ("pk", "commitment__pk")
    search_fields = ("commitment__description", "proposed_by__email", "note", "answer_note")
    search_help_text = "Proposal or commitment id, the commitment's description, an e-mail, a note."
    date_hierarchy = "created_at"
    ordering = ("-created_at",)


@admin.register(Comment)
class CommentAdmin(AuditedAdminMixin, ExactUuidSearchMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """What the two people wrote on a commitment's timeline."""

    list_display = ("commitment", "author", "short_body", "created_at")
    list_select_related = ("commitment", "author")
    uuid_search_fields = ("pk", "commitment__pk")
    search_fields = ("body", "author__email", "commitment__description")
    search_help_text = "Comment or commitment id, words of the comment, the author's e-mail."
    date_hierarchy = "created_at"
    ordering = ("-created_at",)

    @admin.display(description="comment")
    def short_body(self, obj: Comment) -> str:
        return obj.body if len(obj.body) <= 80 else obj.body[:79] + "…"
