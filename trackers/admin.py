"""Admin for tracker connections: what the owner sees on their Settings page,
for staff, read-only. The secret is never a field here; rows change only
through the services (which write the audit trail)."""

from __future__ import annotations

from django.contrib import admin

from audit.admin_mixins import AuditedAdminMixin
from lib.admin import ExactUuidSearchMixin, ReadOnlyAdminMixin, ReadOnlyInlineMixin
from trackers.models import TrackerConnection, TrackerEvent


class TrackerEventInline(ReadOnlyInlineMixin, admin.TabularInline):
    model = TrackerEvent
    fields = ("received_at", "delivery_id", "event", "external_id", "outcome", "summary")
    readonly_fields = fields
    ordering = ("-received_at", "-id")


@admin.register(TrackerConnection)
class TrackerConnectionAdmin(
    AuditedAdminMixin, ExactUuidSearchMixin, ReadOnlyAdminMixin, admin.ModelAdmin
):
    list_display = ("system", "kind", "owner", "created_at", "secret_rotated_at")
    list_filter = ("kind", "created_at")
    list_select_related = ("owner",)
    search_fields = ("system", "owner__email")
    uuid_search_fields = ("pk",)
    fields = (
        "id",
        "owner",
        "kind",
        "system",
        "site",
        "identity_map",
        "created_at",
        "secret_rotated_at",
    )
    readonly_fields = fields
    inlines = [TrackerEventInline]
