"""Admin for model keys: read-only. Staff see whose key it is, for which
provider and model, whether it is the default and its last four characters;
never the key. Keys are stored on Settings, Model keys or with
`manage.py set_model_key`."""

from __future__ import annotations

from typing import ClassVar

from django.contrib import admin
from django.http import HttpRequest

from audit.admin_mixins import AuditedAdminMixin
from gather.models import ModelKey


@admin.register(ModelKey)
class ModelKeyAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ("user", "provider", "model", "is_default", "last4", "readable", "updated_at")
    list_filter = ("provider", "is_default")
    list_select_related = ("user",)
    search_fields = ("user__email", "model")
    ordering = ("user__email", "provider")
    # `key` is deliberately absent: not shown, not editable.
    fields: ClassVar[tuple[str, ...]] = (
        "id",
        "user",
        "provider",
        "model",
        "is_default",
        "last4",
        "readable",
    )
    fields += ("created_at", "updated_at")
    readonly_fields = fields

    @admin.display(boolean=True, description="readable")
    def readable(self, obj: ModelKey) -> bool:
        return not obj.unreadable

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
