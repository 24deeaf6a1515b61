"""The service's token and user tables, read as they are (unmanaged: this
project never creates or migrates them), with every column, so that the
floor's SELECT is the one the service's authentication runs."""

from __future__ import annotations

from typing import ClassVar

from django.db import models


class User(models.Model):
    id = models.UUIDField(primary_key=True)
    password = models.CharField(max_length=128)
    last_login = models.DateTimeField(null=True)
    is_superuser = models.BooleanField()
    is_staff = models.BooleanField()
    is_active = models.BooleanField()
    date_joined = models.DateTimeField()
    email = models.CharField(max_length=254)
    display_name = models.CharField(max_length=100)
    timezone = models.CharField(max_length=64)

    # What DRF's IsAuthenticated asks (django.contrib.auth's users answer it).
    is_authenticated = True

    objects: ClassVar[models.Manager[User]] = models.Manager()

    class Meta:
        managed = False
        db_table = "accounts_user"

    def __str__(self) -> str:
        return self.email


class ApiToken(models.Model):
    id = models.UUIDField(primary_key=True)
    user = models.ForeignKey(User, on_delete=models.DO_NOTHING)
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True)
    revoked_at = models.DateTimeField(null=True)
    expires_at = models.DateTimeField(null=True)
    expiry_recorded_at = models.DateTimeField(null=True)
    scopes = models.JSONField()
    networks = models.JSONField()

    objects: ClassVar[models.Manager[ApiToken]] = models.Manager()

    class Meta:
        managed = False
        db_table = "integrations_apitoken"

    def __str__(self) -> str:
        return self.prefix
