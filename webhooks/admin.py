"""Admin for webhook endpoints and deliveries: what the owner sees on the
Webhooks page, for staff, read-only.

An endpoint shows the events it is sent: the contract's four, then the
ones its owner chose on the Webhooks page.

Secrets are never shown (the current and previous signing secret are not
fields here), and an endpoint's URL is shown as scheme and host only: a path
or query may carry a credential of the receiver's (it is stored encrypted).
An endpoint whose owner is deactivated says so: nothing is sent to it (the
next event or send pauses it). Rows change only through
the services, which write the audit trail; the one action, replaying
permanently failed deliveries, goes through `webhook_delivery_replay` with
the staff user as actor.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from audit.admin_mixins import AuditedAdminMixin
from audit.services import Actor
from lib.admin import ExactUuidSearchMixin, ReadOnlyAdminMixin, ReadOnlyInlineMixin
from lib.outbound import masked_url
from webhooks import services
from webhooks.errors import WebhookError
from webhooks.models import (
    OWNER_INACTIVE_REASON,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookPayload,
)
from webhooks.payloads import CONTRACT_EVENTS


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(AuditedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "external_system",
        "user",
        "owner_active",
        "url_masked",
        "paused_at",
        "created_at",
    )
    list_filter = (
        ("paused_at", admin.EmptyFieldListFilter),
        ("user__is_active", admin.BooleanFieldListFilter),
        "created_at",
    )
    list_select_related = ("user",)
    search_fields = ("user__email", "external_system")
    ordering = ("user__email", "external_system")
    # `secret` and `previous_secret` are deliberately absent.
    fields = (
        "id",
        "user",
        "owner_active",
        "external_system",
        "url_masked",
        "events_sent",
        "paused_at",
        "paused_reason",
        "problem",
        "previous_secret_until",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields

    @admin.display(description="URL")
    def url_masked(self, obj: WebhookEndpoint) -> str:
        return masked_url(obj.url)

    @admin.display(description="events sent")
    def events_sent(self, obj: WebhookEndpoint) -> str:
        """The contract's four always, then the ones its owner chose."""
        return ", ".join([*CONTRACT_EVENTS, *obj.chosen_events])

    @admin.display(description="owner active", boolean=True, ordering="user__is_active")
    def owner_active(self, obj: WebhookEndpoint) -> bool:
        return obj.user.is_active

    @admin.display(description="why nothing is sent")
    def problem(self, obj: WebhookEndpoint) -> str:
        if not obj.user.is_active and obj.paused_reason != OWNER_INACTIVE_REASON:
            # Not paused yet (no event since the deactivation): skipped all the same.
            return OWNER_INACTIVE_REASON
        return obj.problem or "—"


class WebhookAttemptInline(ReadOnlyInlineMixin, admin.TabularInline):
    model = WebhookAttempt
    fields = ("started_at", "outcome", "status_code", "duration_ms", "response_excerpt", "error")
    readonly_fields = fields
    ordering = ("started_at", "id")


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(
    AuditedAdminMixin, ExactUuidSearchMixin, ReadOnlyAdminMixin, admin.ModelAdmin
):
    list_display = (
        "created_at",
        "event_name",
        "endpoint_label",
        "commitment_id",
        "is_test",
        "status",
        "attempts",
        "last_status_code",
        "next_attempt_at",
    )
    list_filter = ("status", "event_name", "is_test", "created_at")
    list_select_related = ("endpoint__user",)
    search_fields = ("endpoint__user__email", "endpoint__external_system")
    uuid_search_fields = ("pk", "commitment_id")
    search_help_text = "Owner's e-mail, external system, delivery id or commitment id."
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    fields = (
        "id",
        "endpoint_label",
        "event_name",
        "is_test",
        "commitment_id",
        "status",
        "attempts",
        "first_attempt_at",
        "next_attempt_at",
        "claimed_until",
        "delivered_at",
        "failed_at",
        "replays",
        "last_status_code",
        "last_response_excerpt",
        "last_error",
        "body",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields
    inlines = [WebhookAttemptInline]
    actions = ["replay_selected"]

    @admin.display(description="endpoint", ordering="endpoint__external_system")
    def endpoint_label(self, obj: WebhookDelivery) -> str:
        endpoint = obj.endpoint
        return f"{endpoint.external_system} of {endpoint.user.email} ({masked_url(endpoint.url)})"

    @admin.display(description="body sent (frozen)")
    def body(self, obj: WebhookDelivery) -> str:
        try:
            return obj.payload.body
        except WebhookPayload.DoesNotExist:
            return "—"

    def has_replay_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("webhooks.change_webhookdelivery")

    @admin.action(
        description="Replay (permanently failed deliveries: same id, current secret)",
        permissions=["replay"],
    )
    def replay_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        # One transaction with the audit rows the service writes
        # (AuditedAdminMixin.response_action); the staff user is the actor.
        actor = Actor.for_user(request.user)
        replayed, refused = 0, []
        for delivery in queryset.select_related("endpoint"):
            try:
                services.webhook_delivery_replay(delivery=delivery, actor=actor)
            except WebhookError as exc:
                refused.append(f"{delivery.pk}: {exc.message}")
            else:
                replayed += 1
        self.message_user(request, f"Replaying {replayed} delivery(ies).", messages.SUCCESS)
        if refused:
            self.message_user(request, "Not replayed: " + "; ".join(refused), messages.WARNING)
