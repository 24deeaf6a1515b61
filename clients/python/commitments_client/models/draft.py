from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.confidence_enum import ConfidenceEnum

T = TypeVar("T", bound="Draft")


@_attrs_define
class Draft:
    """
    Attributes:
        description (str): What is to be done, as a commitment.
        assignee_name (None | str): Who is asked, as the text names them; null when nobody is.
        assignee_email (None | str): Filled only when the name matches exactly one of your collaborators (people you
            already have a commitment with, either way); otherwise null.
        deadline (datetime.datetime | None): The deadline resolved to ISO-8601 with your time zone's offset, or null.
        deadline_text (None | str): The deadline as the text says it ("by Friday"), or null.
        confidence (ConfidenceEnum): * `high` - high
            * `medium` - medium
            * `low` - low
        source_quote (str): The passage of the text the draft comes from, verbatim.
    """

    description: str
    assignee_name: None | str
    assignee_email: None | str
    deadline: datetime.datetime | None
    deadline_text: None | str
    confidence: ConfidenceEnum
    source_quote: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        description = self.description

        assignee_name: None | str
        assignee_name = self.assignee_name

        assignee_email: None | str
        assignee_email = self.assignee_email

        deadline: None | str
        if isinstance(self.deadline, datetime.datetime):
            deadline = self.deadline.isoformat()
        else:
            deadline = self.deadline

        deadline_text: None | str
        deadline_text = self.deadline_text

        confidence = self.confidence.value

        source_quote = self.source_quote

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "description": description,
                "assigneeName": assignee_name,
                "assigneeEmail": assignee_email,
                "deadline": deadline,
                "deadlineText": deadline_text,
                "confidence": confidence,
                "sourceQuote": source_quote,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        description = d.pop("description")

        def _parse_assignee_name(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        assignee_name = _parse_assignee_name(d.pop("assigneeName"))

        def _parse_assignee_email(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        assignee_email = _parse_assignee_email(d.pop("assigneeEmail"))

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

        def _parse_deadline_text(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        deadline_text = _parse_deadline_text(d.pop("deadlineText"))

        confidence = ConfidenceEnum(d.pop("confidence"))

        source_quote = d.pop("sourceQuote")

        draft = cls(
            description=description,
            assignee_name=assignee_name,
            assignee_email=assignee_email,
            deadline=deadline,
            deadline_text=deadline_text,
            confidence=confidence,
            source_quote=source_quote,
        )

        draft.additional_properties = d
        return draft

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
