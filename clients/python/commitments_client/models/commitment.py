from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.commitment_status_enum import CommitmentStatusEnum

T = TypeVar("T", bound="Commitment")


@_attrs_define
class Commitment:
    """
    Attributes:
        id (UUID): The commitment's id (as returned by the inbox).
        status (CommitmentStatusEnum): * `Draft` - Draft
            * `Pending_Handshake` - Pending handshake
            * `Active` - Active
            * `Completed` - Completed
            * `Refused` - Declined
            * `Withdrawn` - Withdrawn
        description (str): What is committed to.
        deadline (datetime.datetime | None): The deadline (ISO-8601, UTC), or null for none.
        external_system (None | str): The source system of its external reference; null for commitments made in the web
            interface.
        external_id (None | str): Its identifier in that system; null likewise.
        assigner_email (str): The address of who asked.
        assignee_email (str): The address of who is asked: the assignee's, or, while nobody has an account for it, the
            address the request was sent to.
        created_at (datetime.datetime): When it was created (ISO-8601, UTC).
        updated_at (datetime.datetime): When it last changed (ISO-8601, UTC): the list's order and `updatedSince` read
            this.
        link (None | str): The deep link to its external reference (the tracker's own issue URL, or the token owner's,
            else the assigner's, link template for the system), or null.
    """

    id: UUID
    status: CommitmentStatusEnum
    description: str
    deadline: datetime.datetime | None
    external_system: None | str
    external_id: None | str
    assigner_email: str
    assignee_email: str
    created_at: datetime.datetime
    updated_at: datetime.datetime
    link: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        status = self.status.value

        description = self.description

        deadline: None | str
        if isinstance(self.deadline, datetime.datetime):
            deadline = self.deadline.isoformat()
        else:
            deadline = self.deadline

        external_system: None | str
        external_system = self.external_system

        external_id: None | str
        external_id = self.external_id

        assigner_email = self.assigner_email

        assignee_email = self.assignee_email

        created_at = self.created_at.isoformat()

        updated_at = self.updated_at.isoformat()

        link: None | str
        link = self.link

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "status": status,
                "description": description,
                "deadline": deadline,
                "externalSystem": external_system,
                "externalId": external_id,
                "assignerEmail": assigner_email,
                "assigneeEmail": assignee_email,
                "createdAt": created_at,
                "updatedAt": updated_at,
                "link": link,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = UUID(d.pop("id"))

        status = CommitmentStatusEnum(d.pop("status"))

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

        def _parse_external_system(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        external_system = _parse_external_system(d.pop("externalSystem"))

        def _parse_external_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        external_id = _parse_external_id(d.pop("externalId"))

        assigner_email = d.pop("assignerEmail")

        assignee_email = d.pop("assigneeEmail")

        created_at = datetime.datetime.fromisoformat(d.pop("createdAt"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updatedAt"))

        def _parse_link(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        link = _parse_link(d.pop("link"))

        commitment = cls(
            id=id,
            status=status,
            description=description,
            deadline=deadline,
            external_system=external_system,
            external_id=external_id,
            assigner_email=assigner_email,
            assignee_email=assignee_email,
            created_at=created_at,
            updated_at=updated_at,
            link=link,
        )

        commitment.additional_properties = d
        return commitment

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
