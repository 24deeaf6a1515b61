from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.sync_target_status_enum import SyncTargetStatusEnum

T = TypeVar("T", bound="SyncRequest")


@_attrs_define
class SyncRequest:
    """
    Attributes:
        external_system (str): Source slug, by convention lowercase without spaces (e.g. `jira`). Trimmed; 1..32
            characters.
        external_id (str): Identifier within the external system. Trimmed; 1..128 characters.
        status (SyncTargetStatusEnum): * `Completed` - Completed
    """

    external_system: str
    external_id: str
    status: SyncTargetStatusEnum
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        external_system = self.external_system

        external_id = self.external_id

        status = self.status.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "externalSystem": external_system,
                "externalId": external_id,
                "status": status,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        external_system = d.pop("externalSystem")

        external_id = d.pop("externalId")

        status = SyncTargetStatusEnum(d.pop("status"))

        sync_request = cls(
            external_system=external_system,
            external_id=external_id,
            status=status,
        )

        sync_request.additional_properties = d
        return sync_request

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
