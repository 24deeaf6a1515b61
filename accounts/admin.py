"""Admin for people: Django's UserAdmin, adapted to the e-mail login (no username),
and Django's GroupAdmin. Every change is audited (`audit.admin_mixins`).

Privileges are a superuser's to give: staff without superuser status see a
user's superuser flag, groups and permissions read-only, cannot change or
delete a superuser (nor set a superuser's password), and see a group's
permissions read-only. So nobody can grant what they do not hold, to
themselves or to anyone else, through a user or through a group.
"""

from __future__ import annotations

from allauth.account.models import EmailAddress
from django import forms
from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin as DjangoGroupAdmin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.contrib.auth.models import Group
from django.http import HttpRequest

from accounts.models import User
from audit.admin_mixins import AuditedAdminMixin

# What only a superuser may change on a user.
PRIVILEGE_FIELDS = ("is_superuser", "groups", "user_permissions")


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

    def _guards_a_superuser(self, request: HttpRequest, obj) -> bool:
        return obj is not None and obj.is_superuser and not request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        # Also guards the password form (`user_change_password` asks this).
        if self._guards_a_superuser(request, obj):
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        if self._guards_a_superuser(request, obj):
            return False
        return super().has_delete_permission(request, obj)

    def get_deleted_objects(self, objs, request: HttpRequest):
        # "Delete selected" asks for the model's delete permission only, not
        # each row's: a superuser among the rows makes it a missing permission.
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        if not request.user.is_superuser and any(u.is_superuser for u in objs):
            perms_needed = {*perms_needed, "superuser"}
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
