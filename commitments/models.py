"""Commitments and the outbox of what happened to them.

Transitions are made only through `commitments.services`; nothing here moves a
status by itself.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Status(models.TextChoices):
    """The stored (and API) value, then the word pages use. `Refused` is
    "Declined" to people: the word of the button that reaches it
    (docs/glossary.md)."""

    DRAFT = "Draft", "Draft"
    PENDING_HANDSHAKE = "Pending_Handshake", "Pending handshake"
    ACTIVE = "Active", "Active"
    COMPLETED = "Completed", "Completed"
    REFUSED = "Refused", "Declined"
    # The assigner no longer needs it (issue 26): an end state beside
    # Completed and Refused, reached only by `withdraw`; the Flow Score
    # ignores it. The four contract statuses keep their meaning.
    WITHDRAWN = "Withdrawn", "Withdrawn"


DESCRIPTION_MAX = 2000
NOTE_MAX = 500  # a proposal's, an answer's or a withdrawal's note
COMMENT_MAX = 2000
EXTERNAL_SYSTEM_MAX = 32
EXTERNAL_ID_MAX = 128
LINK_URL_MAX = 500


def overdue(now) -> Q:
    """Active past its deadline: the one definition of overdue, for the pages
    (the selectors annotate it) and the Flow Score alike."""
    return Q(status=Status.ACTIVE, deadline__lt=now)


class Commitment(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.DRAFT)
    # Both sides indexed by the indexes below that lead with them (each write
    # of a commitment writes every index that holds it: none that another
    # already serves).
    assigner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="commitments_assigned",
        db_index=False,
    )
    # Null only while the person asked has no account yet: the commitment then
    # names its `invitation` (the address asked) and waits, as a Draft or for
    # the handshake, until an account verifies that address
    # (services.commitment_invitations_claim sets the assignee then).
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="commitments_owed",
        null=True,
        blank=True,
        db_index=False,
    )
    invitation = models.ForeignKey(
        "Invitation",
        on_delete=models.PROTECT,
        related_name="commitments",
        null=True,
        blank=True,
        # Indexed where it is set (cmt_invitation_idx): most rows have none.
        db_index=False,
    )
    description = models.TextField(max_length=DESCRIPTION_MAX)
    # NULL, not '', is meaningful here: raw_text is null for inbox rows
    # (docs/api.md), and the external pair is both-null or both-set (a constraint).
    raw_text = models.TextField(null=True, blank=True)  # noqa: DJ001
    deadline = models.DateTimeField(null=True, blank=True)
    external_system = models.CharField(  # noqa: DJ001
        max_length=EXTERNAL_SYSTEM_MAX, null=True, blank=True
    )
    external_id = models.CharField(  # noqa: DJ001
        max_length=EXTERNAL_ID_MAX, null=True, blank=True
    )
    # The source's own web address of what this commitment tracks (a tracker
    # connection's issue URL): the commitment page links it in preference to
    # the per-system link templates. Null for everything else.
    link_url = models.URLField(max_length=LINK_URL_MAX, null=True, blank=True)  # noqa: DJ001
    # Both set by the services, so created_at and updated_at of a new row, and
    # a transition's stamp, updated_at and the outbox row's occurred_at, are
    # one and the same instant (not auto_now_add: that stamps the row again
    # as it is written, a moment after the rest).
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)
    activated_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    refused_at = models.DateTimeField(null=True, blank=True)
    renegotiated_at = models.DateTimeField(null=True, blank=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    # The version of the terms (description and deadline): 1 when created, one
    # more with every draft edit and every renegotiation. A page posts the
    # version it showed, so nobody accepts, declines or overwrites terms they
    # never saw (commitments.errors.TermsChanged).
    terms_version = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["external_system", "external_id", "assigner"],
                name="commitment_external_ref_unique",
            ),
            models.CheckConstraint(
                condition=(
                    Q(external_system__isnull=True, external_id__isnull=True)
                    | Q(external_system__isnull=False, external_id__isnull=False)
                ),
                name="commitment_external_ref_both_or_neither",
            ),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in Status]),
                name="commitment_status_valid",
            ),
            # Someone is asked: a user, or an invited address. Only a Draft or
            # a request waiting for its handshake may wait for an account (and
            # such a request, withdrawn, stays as it was asked).
            models.CheckConstraint(
                condition=Q(assignee__isnull=False)
                | Q(
                    invitation__isnull=False,
                    status__in=[Status.DRAFT, Status.PENDING_HANDSHAKE, Status.WITHDRAWN],
                ),
                name="commitment_assignee_or_invitation",
            ),
        ]
        indexes = [
            models.Index(
                fields=["assignee", "status", "-created_at"], name="commitment_assignee_idx"
            ),
            models.Index(
                fields=["assigner", "status", "-created_at"], name="commitment_assigner_idx"
            ),
            # The read API's list (commitments.selectors.commitment_page_for):
            # newest change first, keyset-paged on (updated_at, id), one side
            # (assigner or assignee) at a time, with or without a status. The
            # external reference is found through the unique constraint above.
            models.Index(
                fields=["assigner", "-updated_at", "-id"], name="cmt_assigner_changed_idx"
            ),
            models.Index(
                fields=["assignee", "-updated_at", "-id"], name="cmt_assignee_changed_idx"
            ),
            models.Index(
                fields=["assigner", "status", "-updated_at", "-id"],
                name="cmt_assigner_st_changed_idx",
            ),
            models.Index(
                fields=["assignee", "status", "-updated_at", "-id"],
                name="cmt_assignee_st_changed_idx",
            ),
            # The reminders (notifications.selectors.reminders_due): Active
            # ones by deadline (due soon, overdue), requests waiting for
            # their handshake by when they were sent. Without them each run
            # read the whole table (benchmarks/scale.py); partial, so they
            # hold a fifth and a tenth of the rows.
            models.Index(
                fields=["deadline"],
                condition=Q(status=Status.ACTIVE),
                name="cmt_active_deadline_idx",
            ),
            models.Index(
                fields=["updated_at"],
                condition=Q(status=Status.PENDING_HANDSHAKE),
                name="cmt_waiting_changed_idx",
            ),
            # The commitments waiting for an address's account
            # (services.commitment_invitations_claim).
            models.Index(
                fields=["invitation"],
                condition=Q(invitation__isnull=False),
                name="cmt_invitation_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.description[:60]} ({self.status})"

    @property
    def has_external_ref(self) -> bool:
        return self.external_system is not None

    @property
    def assignee_label(self) -> str:
        """Who is asked, for pages: the assignee's name, or the invited address
        while nobody has an account for it (load `invitation` with the row)."""
        # An unset foreign key reads as None without a query.
        if self.assignee is not None:
            return self.assignee.name
        return self.invitation.email if self.invitation is not None else ""


class Invitation(models.Model):
    """An address asked for something before anyone had an account for it.

    One row per address (stored lower-case). Commitments asking it reference
    the row until an account verifies the address; then
    `services.commitment_invitations_claim` makes that user their assignee and
    stamps `claimed_by`/`claimed_at`. The invitation e-mail itself is a nudge
    (an `invited` outbox event, delivered by the workers like every nudge).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(max_length=254, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    claimed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.email


class AccordVisit(models.Model):
    """When a person last looked at their Accord: what was created or changed
    since is marked "new" or "changed" on their next visit."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.user_id} at {self.seen_at}"


class EventKind(models.TextChoices):
    """What happened to a commitment; each is one outbox row, written with the change."""

    HANDSHAKE_REQUESTED = "handshake_requested", "Handshake requested"
    ACTIVATED = "activated", "Accepted"
    REFUSED = "refused", "Declined"
    COMPLETED = "completed", "Completed"
    RENEGOTIATED = "renegotiated", "Renegotiated"
    # A request to an address with no account yet: the nudge is an invitation
    # e-mail to `commitment.invitation.email`, at most one a day per address
    # (notifications.dispatch). Its renegotiation is `renegotiated` and mails
    # nobody (events written before that rule may still say `invited`).
    INVITED = "invited", "Invited"
    # The conversation around a commitment (issue 26). Accepting a
    # counter-proposal is `activated` (the contract's event); the outbox row's
    # `detail` names the proposal, comment or previous assignee, or a
    # withdrawal's reason.
    PROPOSED = "proposed", "Proposed other terms"
    PROPOSAL_DECLINED = "proposal_declined", "Proposal declined"
    EXTENSION_REQUESTED = "extension_requested", "Asked for more time"
    EXTENSION_GRANTED = "extension_granted", "More time granted"
    EXTENSION_DECLINED = "extension_declined", "More time declined"
    COMMENTED = "commented", "Commented"
    WITHDRAWN = "withdrawn", "Withdrawn"
    REASSIGNED = "reassigned", "Reassigned"


class OutboxEvent(models.Model):
    """A transactional-outbox row: written in the transaction of the change it
    records, turned into nudges and webhook deliveries by the workers in
    `integrations`. It names what happened, to which commitment, and by whom.
    """

    id = models.BigAutoField(primary_key=True)
    commitment = models.ForeignKey(Commitment, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=32, choices=EventKind.choices)
    previous_status = models.CharField(max_length=24, blank=True)
    new_status = models.CharField(max_length=24)
    occurred_at = models.DateTimeField(default=timezone.now)
    actor_kind = models.CharField(max_length=16)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_token_id = models.UUIDField(null=True, blank=True)
    # The id of the request that made the change (lib.logs), carried to the
    # log lines of the work it causes: the relay publishes the event's task
    # under it. Empty for changes made outside a request.
    request_id = models.CharField(max_length=128, blank=True, default="")
    # What the move was about, for the nudges and webhooks it causes:
    # {"proposalId": ...}, {"commentId": ...}, {"previousAssigneeId": ...}.
    # Empty for the contract's moves.
    detail = models.JSONField(default=dict, blank=True)
    # Processing state, owned by the dispatcher in `integrations`: null until the
    # event has been turned into deliveries.
    dispatched_at = models.DateTimeField(null=True, blank=True)
    dispatch_attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(dispatched_at__isnull=True),
                name="outbox_undispatched_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} for {self.commitment_id}"


class ProposalKind(models.TextChoices):
    """A counter-proposal answers a request waiting for its handshake with
    other terms; an extension asks for a later deadline on an Active one."""

    COUNTER = "counter", "Counter-proposal"
    EXTENSION = "extension", "Extension"


class ProposalState(models.TextChoices):
    OPEN = "open", "Open"
    ACCEPTED = "accepted", "Accepted"
    DECLINED = "declined", "Declined"
    # Closed without an answer: the terms changed (a renegotiation), the
    # commitment was withdrawn or reassigned, or it ended.
    SUPERSEDED = "superseded", "Superseded"


class Proposal(models.Model):
    """Terms the assignee offers instead of the ones asked (a counter-proposal,
    on Pending_Handshake) or a later deadline they ask for (an extension, on
    Active), and the assigner's answer. At most one open per commitment.
    `description` / `deadline` null: that term unchanged."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    commitment = models.ForeignKey(Commitment, on_delete=models.CASCADE, related_name="proposals")
    kind = models.CharField(max_length=16, choices=ProposalKind.choices)
    state = models.CharField(
        max_length=16, choices=ProposalState.choices, default=ProposalState.OPEN
    )
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    description = models.TextField(max_length=DESCRIPTION_MAX, null=True, blank=True)  # noqa: DJ001
    deadline = models.DateTimeField(null=True, blank=True)
    # The terms it answers: the commitment's terms_version and deadline then.
    terms_version = models.PositiveIntegerField()
    previous_deadline = models.DateTimeField(null=True, blank=True)
    note = models.CharField(max_length=NOTE_MAX, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    answered_at = models.DateTimeField(null=True, blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    answer_note = models.CharField(max_length=NOTE_MAX, blank=True, default="")

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["commitment"],
                condition=Q(state="open"),
                name="proposal_one_open_per_commitment",
            ),
            models.CheckConstraint(
                condition=Q(kind__in=[k.value for k in ProposalKind]), name="proposal_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(state__in=[s.value for s in ProposalState]),
                name="proposal_state_valid",
            ),
        ]
        indexes = [
            # Reminders: open proposals waiting longer than a while.
            models.Index(
                fields=["created_at"], condition=Q(state="open"), name="proposal_open_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} on {self.commitment_id} ({self.state})"


class Comment(models.Model):
    """Plain text on a commitment's timeline, by its assigner or assignee."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    commitment = models.ForeignKey(Commitment, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    body = models.TextField(max_length=COMMENT_MAX)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at"]
        indexes = [
            models.Index(fields=["commitment", "created_at"], name="comment_commitment_idx"),
        ]

    def __str__(self) -> str:
        return f"comment on {self.commitment_id}"


LINK_TEMPLATE_MAX = 500
EXTERNAL_ID_PLACEHOLDER = "{externalId}"


class LinkTemplate(models.Model):
    """One person's deep link for one `externalSystem`: a URL with
    `{externalId}` where the commitment's external id goes (URL-quoted), e.g.
    `https://example.atlassian.net/browse/{externalId}`. The commitment page
    links an external reference through the viewer's own template for its
    system, else the assigner's (`commitments.links`)."""

    id = models.BigAutoField(primary_key=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="link_templates"
    )
    system = models.CharField(max_length=EXTERNAL_SYSTEM_MAX)
    template = models.CharField(max_length=LINK_TEMPLATE_MAX)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["system"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "system"], name="link_template_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.system}: {self.template}"
