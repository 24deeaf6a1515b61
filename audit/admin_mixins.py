"""Every staff action in the Django admin goes on the audit trail.

`AuditedAdminMixin` goes first in the bases of every registered ModelAdmin
(a test walks the admin site and checks). Django calls `log_addition`,
`log_change` and `log_deletions` for each add, change (the change form, the
password form of a user, list edits) and delete (the delete page and the
"delete selected" action); the mixin keeps Django's own LogEntry and writes
an audit event in the same transaction, with the staff user as actor.
Custom admin actions record what they did with `admin_action_record`, and
every action runs in one transaction with its audit rows.

What an event holds (`payload`):

- `object`: the model (`app_label.model`), the primary key and the name the
  admin showed;
- for a change or an addition, `fields`: the names of the changed form
  fields, and `changes`: for each of them its old and new value, or for a
  many-to-many field (groups, permissions) what was added and removed.
  Permissions are written `app_label.codename`. A field that holds a secret
  (a password, a key, a token, a chat URL) is named in `fields` but its
  values are never written.

The subject is the changed object when its primary key is a UUID (users,
commitments, tokens, channels, deliveries). An event names its subject by
UUID, so for a model with another kind of key (Django's `Group`) the subject
is the staff user who acted and `payload.object` names the group.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from django import forms
from django.contrib.auth.models import Permission
from django.db import models, router, transaction
from django.http import HttpRequest

from audit.models import AuditAction
from audit.services import Actor, audit_event_record

SECRET_MARKERS = ("password", "secret", "token", "key", "digest", "chat_url", "webhook_url")
_CHANGES_ATTR = "_audit_admin_changes"


def _is_secret(name: str) -> bool:
    return any(marker in name.lower() for marker in SECRET_MARKERS)


def _label(obj: models.Model) -> str:
    if isinstance(obj, Permission):
        return f"{obj.content_type.app_label}.{obj.codename}"
    return str(obj)


def _plain(value: Any) -> Any:
    """A JSON-safe rendering of a form value."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, models.Model):
        return _label(value)
    return str(value)


def _many_to_many_change(field: forms.ModelMultipleChoiceField, old: Any, new: Any) -> dict:
    old_pks = {getattr(o, "pk", o) for o in (old or [])}
    new_pks = {o.pk for o in (new or [])}
    queryset = field.queryset
    assert queryset is not None  # the admin's many-to-many fields have one
    model = queryset.model
    touched = model._default_manager.filter(pk__in=old_pks ^ new_pks)
    if model is Permission:
        touched = touched.select_related("content_type")
    labels = {o.pk: _label(o) for o in touched}
    return {
        "added": sorted(labels[pk] for pk in new_pks - old_pks if pk in labels),
        "removed": sorted(labels[pk] for pk in old_pks - new_pks if pk in labels),
    }


def form_changes(form: forms.BaseForm, *, add: bool = False) -> dict[str, Any]:
    """The changed fields of a bound, valid form, with old and new values (none for secrets)."""
    names: list[str] = []
    changes: dict[str, Any] = {}
    for name in form.changed_data:
        # A form may report a name of its own (AdminPasswordChangeForm: "password").
        field = form.fields.get(name)
        secret = _is_secret(name) or (
            field is not None and isinstance(field.widget, forms.PasswordInput)
        )
        shown = "password" if secret and "password" in name.lower() else name
        if shown not in names:
            names.append(shown)
        if secret or field is None:
            continue
        old = None if add else form.initial.get(name)
        new = form.cleaned_data.get(name)
        if isinstance(field, forms.ModelMultipleChoiceField):
            changes[name] = _many_to_many_change(field, old, new)
        elif isinstance(field, forms.ModelChoiceField):
            changes[name] = {
                "old": _plain(getattr(old, "pk", old)),
                "new": _plain(getattr(new, "pk", new)),
            }
        else:
            changes[name] = {"old": _plain(old), "new": _plain(new)}
    return {"fields": names, "changes": changes}


def describe(obj: models.Model) -> dict[str, str]:
    return {"model": obj._meta.label_lower, "id": str(obj.pk), "repr": str(obj)[:200]}


def admin_event_record(
    request: HttpRequest,
    obj: models.Model,
    action: AuditAction,
    payload: dict[str, Any] | None = None,
) -> None:
    """Write one audit event for what a staff user did to `obj` in the admin."""
    user = request.user
    assert isinstance(user, models.Model)  # the admin's pages are for signed-in staff
    subject = obj if isinstance(obj.pk, uuid.UUID) else user
    audit_event_record(
        actor=Actor.for_user(request.user),
        subject=subject,
        action=action,
        payload={"object": describe(obj), **(payload or {})},
    )


class AuditedAdminMixin:
    """Put first in a ModelAdmin's bases: its adds, changes, deletions and
    actions are written to the audit trail (see the module's docstring)."""

    def construct_change_message(self, request, form, formsets, add=False):
        message = super().construct_change_message(request, form, formsets, add)
        # Django builds the change message from the form right before it calls
        # log_addition or log_change; the values are kept for that call.
        setattr(request, _CHANGES_ATTR, form_changes(form, add=add))
        return message

    def _pop_changes(self, request: HttpRequest) -> dict[str, Any]:
        changes = getattr(request, _CHANGES_ATTR, None) or {"fields": [], "changes": {}}
        if hasattr(request, _CHANGES_ATTR):
            delattr(request, _CHANGES_ATTR)
        return changes

    def log_addition(self, request, obj, message):
        entry = super().log_addition(request, obj, message)
        admin_event_record(request, obj, AuditAction.ADMIN_ADDED, self._pop_changes(request))
        return entry

    def log_change(self, request, obj, message):
        entry = super().log_change(request, obj, message)
        admin_event_record(request, obj, AuditAction.ADMIN_CHANGED, self._pop_changes(request))
        return entry

    def log_deletions(self, request, queryset: Iterable[models.Model]):
        objects = list(queryset)  # before the deletion: the rows still exist
        entries = super().log_deletions(request, objects)  # type: ignore[misc]  # a mixin: ModelAdmin's
        for obj in objects:
            admin_event_record(request, obj, AuditAction.ADMIN_DELETED)
        return entries

    def response_action(self, request, queryset):
        # An action and the audit rows it writes commit together or not at all.
        with transaction.atomic(using=router.db_for_write(self.model)):
            return super().response_action(request, queryset)


def admin_action_record(
    request: HttpRequest, obj: models.Model, action: AuditAction, **payload: Any
) -> None:
    """For a custom admin action: record that staff applied `action` to `obj`."""
    admin_event_record(request, obj, action, payload)
