"""Admin for API tokens: look, filter, revoke. Never the digest, never a new token
(a plaintext must be shown to its owner, which the admin cannot do safely);
tokens are minted on Settings, API Tokens or with `manage.py mint_token`.
Never a deletion either: a token is revoked (through `api_token_revoke`,
which audits it), so its row and its audit trail stay."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from audit.admin_mixins import AuditedAdminMixin
from audit.services import Actor
from integrations import services
from integrations.models import ApiToken


class RevokedFilter(admin.SimpleListFilter):
    title = "revoked"
    parameter_name = "revoked"

    def lookups(self, request, model_admin):
        return [("no", "Active"), ("yes", "Revoked")]

    def queryset(self, request, queryset):
        if self.value() == "no":
            return queryset.filter(revoked_at__isnull=True)
        if self.value() == "yes":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


@admin.register(ApiToken)
class ApiTokenAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = (
        "name",
        "user",
        "prefix",
        "scope_list",
        "network_list",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = (RevokedFilter, "created_at")
    list_select_related = ("user",)
    search_fields = ("name", "prefix", "user__email")
    ordering = ("-created_at",)
    # `digest` is deliberately absent: not shown, not editable.
    fields = ("id", *list_display)
    readonly_fields = fields
    actions = ["revoke_selected"]

    @admin.display(description="scopes")
    def scope_list(self, token: ApiToken) -> str:
        return ", ".join(token.scopes)

    @admin.display(description="client networks")
    def network_list(self, token: ApiToken) -> str:
        return ", ".join(token.networks) or "any address"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False  # revoke, don't erase (also drops "delete selected")

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        # Revoking is the one change the admin makes to a token.
        return request.user.has_perm("integrations.change_apitoken")

    @admin.action(description="Revoke selected tokens", permissions=["revoke"])
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        actor = Actor.for_user(request.user)
        revoked = sum(
            services.api_token_revoke(actor=actor, token=token)
            for token in queryset.filter(revoked_at__isnull=True)
        )
        self.message_user(request, f"Revoked {revoked} token(s).", messages.SUCCESS)
