"""Admin for people: Django's UserAdmin, adapted to the e-mail login (no username),
and Django's GroupAdmin. Every change is audited (`audit.admin_mixins`).

Privileges are a superuser's to give: staff without superuser status see a
user's staff and superuser flags, groups and permissions read-only, and see a
group's permissions read-only. So nobody can grant what they do not hold, to
themselves or to anyone else, through a user or through a group.

Nor can staff climb by taking over an account that holds more than they do:
without superuser status they change, set the password of, or delete only a
user who is neither staff nor superuser and whose permissions (their own and
their groups', counted even while the account is inactive) are a subset of
the actor's. Every route of the user admin asks `within_reach`: the change
form (so a staff account's e-mail, the login, is out of reach too), the
password form, the delete page and the "delete selected" action. Another
staff account, one's own included, is changed by a superuser only (one's own
profile, address and password are changed on Settings, as anyone's are).
"""

from __future__ import annotations

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from allauth.socialaccount.models import SocialAccount, SocialApp, SocialToken
from django import forms
from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin as DjangoGroupAdmin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.http import HttpRequest

from accounts.models import SsoProvider, User, normalise_domains
from accounts.sso import redirect_uri
from audit.admin_mixins import AuditedAdminMixin

# What only a superuser may change on a user.
PRIVILEGE_FIELDS = ("is_staff", "is_superuser", "groups", "user_permissions")
_HELD_ATTR = "_admin_permissions_held"  # per request: {user pk: permission ids}


def _permissions_held(request: HttpRequest, user: User) -> frozenset[int]:
    """The ids of the permissions `user` holds directly or through a group,
    whether or not the account is active (the active flag is staff's to set).
    Remembered for the request: the admin asks several times per page."""
    held = request.__dict__.setdefault(_HELD_ATTR, {})
    if user.pk not in held:
        held[user.pk] = frozenset(
            Permission.objects.filter(Q(user=user) | Q(group__user=user))
            .values_list("pk", flat=True)
            .distinct()
        )
    return held[user.pk]


def within_reach(request: HttpRequest, target: User) -> bool:
    """May the staff user of `request` change, reset or delete `target`? A
    superuser may; anyone else only a plain account that holds no permission
    the actor lacks."""
    actor = request.user
    if not isinstance(actor, User):  # the admin's pages are for signed-in staff
        return False
    if actor.is_superuser:
        return True
    if target.is_superuser or target.is_staff:
        return False
    return _permissions_held(request, target) <= _permissions_held(request, actor)


def _clean_unique_email(form: forms.ModelForm) -> str:
    email = (form.cleaned_data.get("email") or "").strip().lower()
    taken = User.objects.filter(email__iexact=email)
    if form.instance.pk:
        taken = taken.exclude(pk=form.instance.pk)
    if taken.exists():
        raise forms.ValidationError("A user with this e-mail address already exists.")
    return email


class UserCreationAdminForm(AdminUserCreationForm):
    class Meta:
        model = User
        fields = ("email",)

    def clean_email(self) -> str:
        return _clean_unique_email(self)


class UserChangeAdminForm(UserChangeForm):
    class Meta:
        model = User
        fields = "__all__"

    def clean_email(self) -> str:
        return _clean_unique_email(self)


# The e-mail address is the login and lives on User. allauth's EmailAddress rows
# are its own bookkeeping; editing them here would split the truth in two.
if admin.site.is_registered(EmailAddress):
    admin.site.unregister(EmailAddress)


@admin.register(User)
class UserAdmin(AuditedAdminMixin, DjangoUserAdmin):
    form = UserChangeAdminForm
    add_form = UserCreationAdminForm
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Profile", {"fields": ("display_name", "timezone")}),
        (
            "Permissions",
            {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")},
        ),
        ("Important dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = (
        (
            None,
            {
                "classes": ("wide",),
                "fields": ("email", "usable_password", "password1", "password2"),
            },
        ),
    )
    list_display = ("email", "display_name", "is_staff", "date_joined")
    list_filter = ("is_staff", "is_superuser", "is_active")
    search_fields = ("email", "display_name")
    ordering = ("email",)
    readonly_fields = ("last_login", "date_joined")

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser:
            fields += tuple(f for f in PRIVILEGE_FIELDS if f not in fields)
        return fields

    def _beyond_reach(self, request: HttpRequest, obj) -> bool:
        return obj is not None and not within_reach(request, obj)

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        # Also guards the password form (`user_change_password` asks this).
        if self._beyond_reach(request, obj):
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        if self._beyond_reach(request, obj):
            return False
        return super().has_delete_permission(request, obj)

    def get_deleted_objects(self, objs, request: HttpRequest):
        # "Delete selected" asks for the model's delete permission only, not
        # each row's: a row beyond reach makes it a missing permission.
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        if any(not within_reach(request, user) for user in objs):
            perms_needed = {*perms_needed, "staff or users with more permissions than yours"}
        return deleted, counts, perms_needed, protected


if admin.site.is_registered(Group):
    admin.site.unregister(Group)


@admin.register(Group)
class GroupAdmin(AuditedAdminMixin, DjangoGroupAdmin):
    def get_readonly_fields(self, request: HttpRequest, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser and "permissions" not in fields:
            fields += ("permissions",)
        return fields


# allauth.mfa's second factors: listed, never edited here (the secrets stay
# out of the admin). A superuser deletes the rows of a person who lost their
# factor (both of them, the app and the recovery codes), audited as every
# deletion is; `manage.py remove_second_factor` does the same with a reason.
if admin.site.is_registered(Authenticator):
    admin.site.unregister(Authenticator)


@admin.register(Authenticator)
class AuthenticatorAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ("user", "type", "created_at", "last_used_at")
    list_filter = ("type",)
    search_fields = ("user__email",)
    list_select_related = ("user",)
    fields = ("user", "type", "created_at", "last_used_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser


class SsoProviderAdminForm(forms.ModelForm):
    """The client secret is written, never shown: empty on a change keeps the
    stored one. Domains are typed comma- or space-separated."""

    client_secret = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="Stored encrypted; leave empty to keep the current secret.",
    )
    issuer = forms.URLField(
        max_length=500,
        assume_scheme="https",
        help_text="The issuer URL (its /.well-known/openid-configuration is read).",
    )
    domains = forms.CharField(
        required=False,
        help_text="Domains whose people must sign in with this provider (comma-separated).",
    )

    class Meta:
        model = SsoProvider
        fields = (
            "name",
            "slug",
            "issuer",
            "client_id",
            "client_secret",
            "domains",
            "trusted_for_domain_addresses",
            "enforces_mfa",
            "enabled",
        )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if not self.instance._state.adding:
            self.initial["domains"] = ", ".join(self.instance.domains)
            # The redirect URI registered at the provider names the slug.
            self.fields["slug"].disabled = True

    def clean_domains(self) -> list[str]:
        raw = self.cleaned_data.get("domains") or ""
        try:
            return normalise_domains([d for d in raw.replace(",", " ").split() if d])
        except ValidationError as exc:
            raise forms.ValidationError(exc.message_dict["domains"]) from exc

    def clean_client_secret(self) -> str:
        secret = self.cleaned_data.get("client_secret") or ""
        if not secret:
            if self.instance._state.adding:
                raise forms.ValidationError("The client secret is required.")
            return self.instance.client_secret
        return secret


@admin.register(SsoProvider)
class SsoProviderAdmin(AuditedAdminMixin, admin.ModelAdmin):
    form = SsoProviderAdminForm
    list_display = (
        "name",
        "issuer",
        "enabled",
        "trusted_for_domain_addresses",
        "enforces_mfa",
        "domain_list",
    )
    list_filter = ("enabled", "trusted_for_domain_addresses", "enforces_mfa")
    readonly_fields = ("redirect_uri_to_register", "created_at", "updated_at")
    prepopulated_fields = {"slug": ("name",)}

    @admin.display(description="Domains")
    def domain_list(self, obj: SsoProvider) -> str:
        return ", ".join(obj.domains)

    @admin.display(description="Redirect URI to register at the provider")
    def redirect_uri_to_register(self, obj: SsoProvider) -> str:
        if obj._state.adding or not obj.slug:
            return "(shown once saved)"
        return redirect_uri(obj)

    def get_prepopulated_fields(self, request: HttpRequest, obj=None) -> dict:
        return {} if obj is not None else dict(self.prepopulated_fields)


# allauth's own tables for apps and tokens are not used (accounts.sso): their
# admin pages would invite a plaintext secret that nothing reads. Its links of
# people to providers get an audited admin of ours instead of allauth's.
for _model in (SocialApp, SocialToken, SocialAccount):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)


@admin.register(SocialAccount)
class SocialAccountAdmin(AuditedAdminMixin, admin.ModelAdmin):
    """Who is linked to which SSO provider; deleting a link makes the person's
    next sign-in with that provider follow the first-sign-in rules again."""

    list_display = ("user", "provider", "uid", "last_login", "date_joined")
    list_filter = ("provider",)
    search_fields = ("user__email", "uid")
    readonly_fields = ("user", "provider", "uid", "extra_data", "last_login", "date_joined")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
