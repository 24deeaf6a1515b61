"""What the service knows of one tracker: the base of the classes in this
package, one per tracker kind, chosen by the registry (`trackers.kinds`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, ClassVar

from trackers import signatures
from trackers.payloads import Change, NotAnIssueEvent


class Tracker:
    """One tracker kind: how it signs a delivery, where it puts the delivery's
    id (and its freshness, where it says one), which field of its users the
    identity map matches, its own web host, and how its issue events read
    into a `Change`. The link rule is every tracker's: an issue link is used
    when it is https on the connection's site, which is `default_site` when
    the tracker has one host for everyone, else learnt from its first
    delivery with a link (`trackers.services`)."""

    scheme: ClassVar[signatures.Scheme]
    # The headers that may carry the delivery's id, tried in order.
    delivery_headers: ClassVar[tuple[str, ...]]
    # The one field of the tracker's user that the identity map is matched
    # against: unique in the tracker and not chosen to look like someone else
    # (a display name is neither). Named in pages and the log.
    identity_field: ClassVar[str]
    # The tracker's one web host, when it has one for everyone ("" when each
    # customer runs their own, or has their own site).
    default_site: ClassVar[str] = ""
    # The tracker makes its own signing secret and lets nobody choose it: the
    # connection's page offers to paste it.
    makes_own_secret: ClassVar[bool] = False
    # Why a delivery that `fresh` refuses is refused.
    stale: ClassVar[str] = ""

    def signature_check(
        self, *, secret: str, headers: Mapping[str, str]
    ) -> signatures.SignatureCheck:
        return signatures.signature_check(self.scheme, secret=secret, headers=headers)

    def delivery_id(self, *, headers: Mapping[str, str], body_sha256: str | None) -> str:
        return signatures.delivery_id(
            self.delivery_headers, headers=headers, body_sha256=body_sha256
        )

    def fresh(self, data: Any, *, now: dt.datetime) -> bool:
        """Whether the decoded body (None when it is not JSON) was sent just
        now, for a tracker that signs the moment it sent it; True for the
        others (their deliveries are told apart by id and by body)."""
        return True

    def change(self, headers: Mapping[str, str], data: Any) -> Change:
        """The delivery's decoded JSON as a Change; `NotAnIssueEvent` when it
        is not an object shaped as this tracker's issue events."""
        if not isinstance(data, dict):
            raise NotAnIssueEvent("the body is not a JSON object")
        return self.read(headers, data)

    def read(self, headers: Mapping[str, str], data: dict[str, Any]) -> Change:
        """The delivery's JSON object as a Change; `NotAnIssueEvent` when it is
        not shaped as this tracker's issue events."""
        raise NotImplementedError
