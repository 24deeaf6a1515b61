from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.actor_kind_enum import ActorKindEnum
from ..models.commitment_status_enum import CommitmentStatusEnum

T = TypeVar("T", bound="HistoryEntry")


@_attrs_define
class HistoryEntry:
    """
    Attributes:
        status (CommitmentStatusEnum): * `Draft` - Draft
            * `Pending_Handshake` - Pending handshake
            * `Active` - Active
            * `Completed` - Completed
            * `Refused` - Declined
            * `Withdrawn` - Withdrawn
        previous_status (CommitmentStatusEnum | None): The status left; null for the creation.

            * `Draft` - Draft
            * `Pending_Handshake` - Pending handshake
            * `Active` - Active
            * `Completed` - Completed
            * `Refused` - Declined
            * `Withdrawn` - Withdrawn
        at (datetime.datetime): When (ISO-8601, UTC).
        actor_kind (ActorKindEnum): * `user` - user
            * `api_token` - api_token
            * `system` - system
    """

    status: CommitmentStatusEnum
    previous_status: CommitmentStatusEnum | None
    at: datetime.datetime
    actor_kind: ActorKindEnum
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        status = self.status.value

        previous_status: None | str
        if isinstance(self.previous_status, CommitmentStatusEnum):
            previous_status = self.previous_status.value
        else:
            previous_status = self.previous_status

        at = self.at.isoformat()

        actor_kind = self.actor_kind.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "status": status,
                "previousStatus": previous_status,
                "at": at,
                "actorKind": actor_kind,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        status = CommitmentStatusEnum(d.pop("status"))

        def _parse_previous_status(data: object) -> CommitmentStatusEnum | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                previous_status_type_1 = CommitmentStatusEnum(data)

                return previous_status_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CommitmentStatusEnum | None, data)

        previous_status = _parse_previous_status(d.pop("previousStatus"))

        at = datetime.datetime.fromisoformat(d.pop("at"))

        actor_kind = ActorKindEnum(d.pop("actorKind"))

        history_entry = cls(
            status=status,
            previous_status=previous_status,
            at=at,
            actor_kind=actor_kind,
        )

        history_entry.additional_properties = d
        return history_entry

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
