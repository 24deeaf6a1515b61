"""Admin for nudge channels, nudge deliveries and their attempts.

Read-only windows: a chat URL is a secret and is shown masked (scheme and
host only); deliveries change only through `notifications.sending`. Two actions:
clear a channel's broken mark, and send failed deliveries again; each is
audited per row, with the staff user as actor.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth import get_permission_codename
from django.db.models import QuerySet
from django.db.models.options import Options
from django.http import HttpRequest
from django.utils import timezone

from audit.admin_mixins import AuditedAdminMixin, admin_action_record
from audit.models import AuditAction
from lib.admin import ReadOnlyAdminMixin, ReadOnlyInlineMixin
from notifications.models import NudgeAttempt, NudgeChannel, NudgeDelivery
from notifications.sending import delivery_retry


def change_permission(opts: Options) -> str:
    """The model's change permission as `has_perm` takes it, read from the
    model (`notifications.change_nudgechannel`), so it follows a rename."""
    return f"{opts.app_label}.{get_permission_codename('change', opts)}"


@admin.register(NudgeChannel)
class NudgeChannelAdmin(AuditedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("user", "kind", "masked_url", "broken_at", "updated_at")
    list_filter = ("kind", ("broken_at", admin.EmptyFieldListFilter))
    list_select_related = ("user",)
    search_fields = ("user__email",)
    ordering = ("-updated_at",)
    # `chat_url` itself is deliberately absent.
    fields = (
        "id",
        "user",
        "kind",
        "masked_url",
        "broken_at",
        "broken_reason",
        "news_asked",
        "news_answered",
        "news_commented",
        "news_reminders",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields
    actions = ["clear_broken"]

    @admin.display(description="chat URL")
    def masked_url(self, obj: NudgeChannel) -> str:
        return obj.masked_url or "—"

    def has_clear_broken_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(change_permission(self.opts))

    @admin.action(
        description="Clear the broken mark (try the channel again)", permissions=["clear_broken"]
    )
    def clear_broken(self, request: HttpRequest, queryset: QuerySet) -> None:
        # One transaction with the audit rows (AuditedAdminMixin.response_action).
        # The reason is left out of the trail: it may quote what the service answered.
        count = 0
        for channel in queryset.filter(broken_at__isnull=False):
            cleared = NudgeChannel.objects.filter(pk=channel.pk, broken_at__isnull=False).update(
                broken_at=None, broken_reason="", updated_at=timezone.now()
            )
            if cleared:
                admin_action_record(
                    request,
                    channel,
                    AuditAction.ADMIN_CHANNEL_BROKEN_CLEARED,
                    brokenAt=channel.broken_at.isoformat(),
                )
                count += 1
        self.message_user(request, f"Cleared {count} channel(s).", messages.SUCCESS)


class NudgeAttemptInline(ReadOnlyInlineMixin, admin.TabularInline):
    model = NudgeAttempt
    fields = ("started_at", "channel", "outcome", "status_code", "duration_ms", "error")
    readonly_fields = fields
    ordering = ("started_at", "id")


@admin.register(NudgeDelivery)
class NudgeDeliveryAdmin(AuditedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "created_at",
        "event_kind",
        "recipient",
        "address",
        "channel",
        "status",
        "attempts",
        "next_attempt_at",
        "delivered_at",
    )
    list_filter = ("status", "channel", "is_digest", "created_at")
    list_select_related = ("recipient", "event", "reminder")
    search_fields = (
        "recipient__email",
        "address",
        "=id",
        "=event__commitment__id",
        "=reminder__commitment__id",
    )
    search_help_text = "Recipient e-mail (or invited address), delivery id or commitment id."
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    fields = (
        "id",
        "event",
        "reminder",
        "commitment_id",
        "recipient",
        "address",
        "channel",
        "status",
        "attempts",
        "next_attempt_at",
        "claimed_until",
        "enqueued_at",
        "delivered_at",
        "last_error",
        # The nudge cap: whose requests it counts for, a digest, or held for one.
        "sender",
        "counted_at",
        "is_digest",
        "digest_reason",
        "digest",
        "coalesce_at",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields
    inlines = [NudgeAttemptInline]
    actions = ["retry_now"]

    @admin.display(description="about", ordering="event__kind")
    def event_kind(self, obj: NudgeDelivery) -> str:
        return obj.about

    @admin.display(description="commitment")
    def commitment_id(self, obj: NudgeDelivery) -> str:
        source = obj.reminder if obj.reminder_id is not None else obj.event
        return str(source.commitment_id) if source is not None else ""

    def has_retry_now_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(change_permission(self.opts))

    @admin.action(
        description="Send again now (failed or waiting deliveries)", permissions=["retry_now"]
    )
    def retry_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = 0
        for delivery in queryset:
            if delivery_retry(delivery_id=delivery.pk):
                admin_action_record(
                    request,
                    delivery,
                    AuditAction.ADMIN_DELIVERY_RETRIED,
                    status=delivery.status,
                    attempts=delivery.attempts,
                )
                count += 1
        self.message_user(request, f"Queued {count} delivery(ies) again.", messages.SUCCESS)
