"""Application errors raised by the commitment services."""

from __future__ import annotations


class CommitmentError(Exception):
    """Base class for errors the services raise on purpose."""


class InvalidTransition(CommitmentError):
    """The state machine does not allow this move from the current status."""

    def __init__(self, *, action: str, current_status: str) -> None:
        self.action = action
        self.current_status = current_status
        super().__init__(f"Cannot {action} a commitment whose status is {current_status}.")


class NotPermitted(CommitmentError):
    """The actor is not the person the state machine lets make this move."""

    def __init__(self, *, action: str, reason: str) -> None:
        self.action = action
        super().__init__(f"Not allowed to {action}: {reason}")


class CommitmentNotFound(CommitmentError):
    def __init__(self, message: str = "No such commitment.") -> None:
        super().__init__(message)


class Contended(CommitmentError):
    """A move lost its compare-and-set to other writes on the same commitment
    every time it was made (commitments.services.ATTEMPTS), each of which
    left it allowed: nothing was written, and the same move made again in a
    moment will likely be made. A transient failure, not a refusal (the API
    answers 503 with Retry-After)."""

    RETRY_AFTER = 1  # seconds

    def __init__(self) -> None:
        super().__init__("It is changing too often at once; try again in a moment.")


class DuplicateExternalRef(CommitmentError):
    def __init__(self) -> None:
        super().__init__(
            "A commitment with this externalSystem and externalId already exists for this assigner."
        )


class NothingChanged(CommitmentError):
    """A renegotiation or a draft edit that changes nothing (and records nothing)."""

    def __init__(
        self, message: str = "A renegotiation must change the description or the deadline."
    ) -> None:
        super().__init__(message)


class TermsChanged(CommitmentError):
    """The terms were changed after the version the actor saw: accepting,
    declining or editing them now would act on terms they never saw. Nothing
    is changed."""

    def __init__(self, *, action: str, shown_version: int, current_version: int) -> None:
        self.action = action
        self.shown_version = shown_version
        self.current_version = current_version
        super().__init__(
            f"Cannot {action} this commitment: its terms changed since they were shown "
            f"(version {shown_version}, now {current_version}). Read the new terms and try again."
        )


class AddressNotAskable(CommitmentError):
    """An address that cannot be asked: a deactivated account's, or an
    invitation over the assigner's daily limit (settings.INVITATIONS_PER_DAY)."""


class LinkTemplateInvalid(CommitmentError):
    """A deep-link template that breaks a rule of `commitments.links`, or a
    second one for a system that has one. `field`: "system" or "template"."""

    def __init__(self, *, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


class ProposalNotOpen(CommitmentError):
    """The proposal answered is not the commitment's open one: answered
    already (a second answer that lost a race), superseded, or not this
    commitment's. Nothing is changed."""

    def __init__(self, message: str = "This proposal was answered already.") -> None:
        super().__init__(message)


class ProposalAlreadyOpen(CommitmentError):
    """A counter-proposal or a request for more time while one waits for its
    answer: one open proposal at a time."""

    def __init__(
        self, message: str = "A proposal on this commitment is waiting for its answer already."
    ) -> None:
        super().__init__(message)


class ProposalInvalid(CommitmentError):
    """A request for more time without a later deadline (none, or not later
    than the current one), or on a commitment with no deadline."""


class CommentInvalid(CommitmentError):
    """A blank comment, or one over COMMENT_MAX characters."""


class ReassignInvalid(CommitmentError):
    """A reassignment to the person asked already, to the assigner, or to
    something that is not an e-mail address."""
