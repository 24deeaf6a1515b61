from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="InboxRequest")


@_attrs_define
class InboxRequest:
    """
    Attributes:
        assigner_email (str): Must be the token owner's address (case-insensitive); otherwise `403 forbidden`.
        assignee_email (str): Must be the address of an existing user (case-insensitive); otherwise `400
            invalid_payload` with `details.assigneeEmail`.
        description (str): What is committed to. Trimmed; 1..2000 characters.
        deadline (datetime.datetime | None): Required key; null means no deadline. An ISO-8601 date and time with `Z` or
            a UTC offset. Dates without a time, times without an offset and relative phrases ("tomorrow") are refused.
        external_system (str): Source slug, by convention lowercase without spaces (e.g. `jira`). Trimmed; 1..32
            characters.
        external_id (str): Identifier within the external system. Trimmed; 1..128 characters.
    """

    assigner_email: str
    assignee_email: str
    description: str
    deadline: datetime.datetime | None
    external_system: str
    external_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        assigner_email = self.assigner_email

        assignee_email = self.assignee_email

        description = self.description

        deadline: None | str
        if isinstance(self.deadline, datetime.datetime):
            deadline = self.deadline.isoformat()
        else:
            deadline = self.deadline

        external_system = self.external_system

        external_id = self.external_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "assignerEmail": assigner_email,
                "assigneeEmail": assignee_email,
                "description": description,
                "deadline": deadline,
                "externalSystem": external_system,
                "externalId": external_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        assigner_email = d.pop("assignerEmail")

        assignee_email = d.pop("assigneeEmail")

        description = d.pop("description")

        def _parse_deadline(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                deadline_type_0 = datetime.datetime.fromisoformat(data)

                return deadline_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        deadline = _parse_deadline(d.pop("deadline"))

        external_system = d.pop("externalSystem")

        external_id = d.pop("externalId")

        inbox_request = cls(
            assigner_email=assigner_email,
            assignee_email=assignee_email,
            description=description,
            deadline=deadline,
            external_system=external_system,
            external_id=external_id,
        )

        inbox_request.additional_properties = d
        return inbox_request

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
