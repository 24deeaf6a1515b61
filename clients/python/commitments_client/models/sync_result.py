from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.commitment_status_enum import CommitmentStatusEnum

T = TypeVar("T", bound="SyncResult")


@_attrs_define
class SyncResult:
    """
    Attributes:
        id (UUID): The commitment's id (as returned by the inbox).
        status (CommitmentStatusEnum): * `Draft` - Draft
            * `Pending_Handshake` - Pending handshake
            * `Active` - Active
            * `Completed` - Completed
            * `Refused` - Declined
            * `Withdrawn` - Withdrawn
        previous_status (CommitmentStatusEnum): * `Draft` - Draft
            * `Pending_Handshake` - Pending handshake
            * `Active` - Active
            * `Completed` - Completed
            * `Refused` - Declined
            * `Withdrawn` - Withdrawn
        changed (bool): False when the commitment already had the requested status (a replay).
    """

    id: UUID
    status: CommitmentStatusEnum
    previous_status: CommitmentStatusEnum
    changed: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        status = self.status.value

        previous_status = self.previous_status.value

        changed = self.changed

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "status": status,
                "previousStatus": previous_status,
                "changed": changed,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = UUID(d.pop("id"))

        status = CommitmentStatusEnum(d.pop("status"))

        previous_status = CommitmentStatusEnum(d.pop("previousStatus"))

        changed = d.pop("changed")

        sync_result = cls(
            id=id,
            status=status,
            previous_status=previous_status,
            changed=changed,
        )

        sync_result.additional_properties = d
        return sync_result

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
