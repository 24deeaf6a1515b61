from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.did_enum import DidEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="HookAction")


@_attrs_define
class HookAction:
    """
    Attributes:
        who (str): The tracker's user (as the tracker shows them), or the commitment's externalId.
        did (DidEnum): * `created` - created
            * `completed` - completed
            * `withdrawn` - withdrawn
            * `recorded` - recorded
            * `renegotiated` - renegotiated
            * `noted` - noted
            * `moved` - moved
            * `kept` - kept
            * `skipped` - skipped
        tracker_user (str | Unset): The tracker's identity field of the person (login, username, user id, accountId):
            what the identity map matches.
        past_due (datetime.date | Unset): The due date, when it had passed already at creation.
        why (str | Unset): Why, when nothing was done.
        email (str | Unset): The assignee's address used.
        commitment_id (UUID | Unset):
        external_id (str | Unset):
    """

    who: str
    did: DidEnum
    tracker_user: str | Unset = UNSET
    past_due: datetime.date | Unset = UNSET
    why: str | Unset = UNSET
    email: str | Unset = UNSET
    commitment_id: UUID | Unset = UNSET
    external_id: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        who = self.who

        did = self.did.value

        tracker_user = self.tracker_user

        past_due: str | Unset = UNSET
        if not isinstance(self.past_due, Unset):
            past_due = self.past_due.isoformat()

        why = self.why

        email = self.email

        commitment_id: str | Unset = UNSET
        if not isinstance(self.commitment_id, Unset):
            commitment_id = str(self.commitment_id)

        external_id = self.external_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "who": who,
                "did": did,
            }
        )
        if tracker_user is not UNSET:
            field_dict["trackerUser"] = tracker_user
        if past_due is not UNSET:
            field_dict["pastDue"] = past_due
        if why is not UNSET:
            field_dict["why"] = why
        if email is not UNSET:
            field_dict["email"] = email
        if commitment_id is not UNSET:
            field_dict["commitmentId"] = commitment_id
        if external_id is not UNSET:
            field_dict["externalId"] = external_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        who = d.pop("who")

        did = DidEnum(d.pop("did"))

        tracker_user = d.pop("trackerUser", UNSET)

        _past_due = d.pop("pastDue", UNSET)
        past_due: datetime.date | Unset
        if isinstance(_past_due, Unset):
            past_due = UNSET
        else:
            past_due = datetime.date.fromisoformat(_past_due)

        why = d.pop("why", UNSET)

        email = d.pop("email", UNSET)

        _commitment_id = d.pop("commitmentId", UNSET)
        commitment_id: UUID | Unset
        if isinstance(_commitment_id, Unset):
            commitment_id = UNSET
        else:
            commitment_id = UUID(_commitment_id)

        external_id = d.pop("externalId", UNSET)

        hook_action = cls(
            who=who,
            did=did,
            tracker_user=tracker_user,
            past_due=past_due,
            why=why,
            email=email,
            commitment_id=commitment_id,
            external_id=external_id,
        )

        hook_action.additional_properties = d
        return hook_action

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
