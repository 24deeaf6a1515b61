from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.hook_action import HookAction


T = TypeVar("T", bound="HookResult")


@_attrs_define
class HookResult:
    """
    Attributes:
        changed (bool): Whether commitments were created or changed.
        redelivery (bool): True when this delivery id, or this very body under another id, was received before: nothing
            was done again.
        event (str): The tracker's event, as read.
        external_id (str): The issue's key.
        summary (str): What was done and why, in words.
        actions (list[HookAction]):
    """

    changed: bool
    redelivery: bool
    event: str
    external_id: str
    summary: str
    actions: list[HookAction]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        changed = self.changed

        redelivery = self.redelivery

        event = self.event

        external_id = self.external_id

        summary = self.summary

        actions = []
        for actions_item_data in self.actions:
            actions_item = actions_item_data.to_dict()
            actions.append(actions_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "changed": changed,
                "redelivery": redelivery,
                "event": event,
                "externalId": external_id,
                "summary": summary,
                "actions": actions,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.hook_action import HookAction  # noqa: PLC0415

        d = dict(src_dict)
        changed = d.pop("changed")

        redelivery = d.pop("redelivery")

        event = d.pop("event")

        external_id = d.pop("externalId")

        summary = d.pop("summary")

        actions = []
        _actions = d.pop("actions")
        for actions_item_data in _actions:
            actions_item = HookAction.from_dict(actions_item_data)

            actions.append(actions_item)

        hook_result = cls(
            changed=changed,
            redelivery=redelivery,
            event=event,
            external_id=external_id,
            summary=summary,
            actions=actions,
        )

        hook_result.additional_properties = d
        return hook_result

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
