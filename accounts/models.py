"""People: e-mail is the login, unique regardless of case."""

from __future__ import annotations

import functools
import re
import uuid
import zoneinfo
from typing import TYPE_CHECKING, ClassVar

from django.contrib.auth.models import AbstractUser, BaseUserManager
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models.functions import Lower

from accounts.signals import credentials_changed
from lib.crypto import EncryptedTextField
from lib.text import has_control_characters


@functools.cache
def known_timezones() -> frozenset[str]:
    """The IANA zones this machine knows, read once per process:
    `zoneinfo.available_timezones()` walks the time zone database on disk at
    every call (tens of milliseconds), and every save of a user validates its
    zone. A tzdata upgrade is seen after a restart, as Django's own caches are."""
    return frozenset(zoneinfo.available_timezones())


def validate_timezone(value: str) -> None:
    if value not in known_timezones():
        raise ValidationError(f"{value!r} is not a known time zone.")


def validate_display_name(value: str) -> None:
    """A name is one line: it goes into mail subjects and headings, where a
    line break would end a header (docs/security.md, "What a nudge says")."""
    if has_control_characters(value):
        raise ValidationError(
            "A name is one line: no line breaks, tabs or other control characters.",
            code="control_characters",
        )


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    def get_by_natural_key(self, email: str | None) -> User:
        return self.get(email__iexact=email)

    def _create_user(self, email: str, password: str | None, **extra: object) -> User:
        if not email:
            raise ValueError("An e-mail address is required.")
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.full_clean(exclude=["password"])
        user.save(using=self._db)
        return user

    def create_user(self, email: str, password: str | None = None, **extra: object) -> User:
        extra.setdefault("is_staff", False)
        extra.setdefault("is_superuser", False)
        return self._create_user(email, password, **extra)

    def create_superuser(self, email: str, password: str | None = None, **extra: object) -> User:
        extra["is_staff"] = True
        extra["is_superuser"] = True
        return self._create_user(email, password, **extra)


class User(AbstractUser):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    username = None  # type: ignore[assignment]
    first_name = None  # type: ignore[assignment]
    last_name = None  # type: ignore[assignment]
    email = models.EmailField("e-mail address", max_length=254)
    display_name = models.CharField(max_length=100, blank=True, validators=[validate_display_name])
    timezone = models.CharField(max_length=64, default="UTC", validators=[validate_timezone])

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    # Ours (e-mail for a username), not AbstractUser's UserManager.
    objects: ClassVar[UserManager] = UserManager()  # type: ignore[assignment]

    if TYPE_CHECKING:
        # Set on the users integrations.selectors.users_by_email returns.
        email_verified: bool
        can_receive: bool

    class Meta:
        ordering = ["email"]
        constraints = [
            models.UniqueConstraint(Lower("email"), name="user_email_ci_unique"),
        ]

    def __str__(self) -> str:
        return self.email

    @classmethod
    def from_db(cls, db, field_names, values):
        instance = super().from_db(db, field_names, values)
        # What the row said, to tell an e-mail change on save (None if deferred).
        instance._stored_email = instance.__dict__.get("email")
        return instance

    def set_unusable_password(self) -> None:
        super().set_unusable_password()
        self._password_disabled = True  # a change too: the old password stops working

    def save(self, *args, **kwargs) -> None:
        # One spelling is stored, so lookups and the unique index agree.
        self.email = (self.email or "").strip().lower()
        adding = self._state.adding
        update_fields = kwargs.get("update_fields")
        changes = []
        # set_password() leaves the raw password in `_password` until the save;
        # Django clears it first for a hash upgrade at sign-in, which is no change.
        password_changed = getattr(self, "_password", None) is not None or getattr(
            self, "_password_disabled", False
        )
        if password_changed and (update_fields is None or "password" in update_fields):
            changes.append("password")
        self._password_disabled = False
        stored_email = getattr(self, "_stored_email", None)
        if (
            stored_email is not None
            and stored_email != self.email
            and (update_fields is None or "email" in update_fields)
        ):
            changes.append("email")
        super().save(*args, **kwargs)
        self._stored_email = self.email
        if adding:
            return  # a new user has nothing to protect yet
        # Every path that changes a credential comes through here, so other apps
        # (integrations revokes API tokens) hear of each one.
        for change in changes:
            for _, notice in credentials_changed.send(sender=type(self), user=self, change=change):
                if notice:
                    self.security_notices.append(notice)

    @property
    def security_notices(self) -> list[str]:
        """Sentences for the person who changed this user's credentials (not stored)."""
        return self.__dict__.setdefault("_security_notices", [])

    @property
    def name(self) -> str:
        return self.display_name or self.email.split("@", 1)[0]

    def get_full_name(self) -> str:
        return self.name

    def get_short_name(self) -> str:
        return self.name


class SsoProvider(models.Model):
    """An OpenID Connect identity provider people may sign in with (Okta, Entra
    ID, Google, Keycloak, ...): added by an operator in the admin or with
    `manage.py add_sso_provider`.

    allauth reads providers from here, never from its own SocialApp table
    (accounts.sso.SocialAccountAdapter.list_apps builds an unsaved SocialApp
    per enabled row), so the client secret is stored only encrypted. The
    address rules it takes part in: docs/security.md, "Single sign-on"."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100, unique=True, help_text='Shown as "Sign in with NAME".')
    # allauth's provider_id: the path of its sign-in and callback URLs
    # (/accounts/oidc/<slug>/login/callback/), so fixed once registered.
    slug = models.SlugField(max_length=60, unique=True)
    issuer = models.URLField(
        max_length=500, help_text="The issuer URL (its /.well-known/openid-configuration is read)."
    )
    client_id = models.CharField(max_length=255)
    client_secret = EncryptedTextField()
    # Lower-case domains whose people must sign in with this provider.
    domains = models.JSONField(default=list, blank=True)
    trusted_for_domain_addresses = models.BooleanField(
        default=False,
        help_text=(
            "Link an existing account to this provider's sign-in when the provider says "
            "its address (in one of the domains above) is verified."
        ),
    )
    enforces_mfa = models.BooleanField(
        "provider enforces MFA",
        default=False,
        help_text=(
            "This provider asks everyone for a second factor of its own, so a sign-in with it "
            "counts as one for staff opening the admin (ADMIN_REQUIRES_MFA). Tick it only "
            "when the provider's policy makes that true for every person who can sign in."
        ),
    )
    enabled = models.BooleanField(
        default=True, help_text="A disabled provider refuses new sign-ins at once."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "SSO provider"

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        self.domains = normalise_domains(self.domains or [])

    def has_domain_of(self, email: str) -> bool:
        return email_domain(email) in self.domains


def email_domain(email: str) -> str:
    return email.rpartition("@")[2].strip().lower()


def normalise_domains(domains: list[str]) -> list[str]:
    """Lower-case domains, each once, in the order given; an invalid one is a
    ValidationError."""
    seen: list[str] = []
    for raw in domains:
        domain = str(raw).strip().lower().lstrip("@")
        if not DOMAIN_RE.fullmatch(domain):
            raise ValidationError({"domains": f"Not a domain: {raw!r}."})
        if domain not in seen:
            seen.append(domain)
    return seen


DOMAIN_RE = re.compile(r"(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}")
