from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.draft import Draft
    from ..models.usage import Usage


T = TypeVar("T", bound="GatherResult")


@_attrs_define
class GatherResult:
    """
    Attributes:
        drafts (list[Draft]): Draft commitments; empty when none were found.
        model (str): The provider's model that answered.
        usage (Usage):
        refusal (None | str): Null, unless the model declined to read your text: then its own words (with a long text
            read in parts, prefixed with the parts it declined). What it declined gives no drafts; usage still counts the
            call.
    """

    drafts: list[Draft]
    model: str
    usage: Usage
    refusal: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        drafts = []
        for drafts_item_data in self.drafts:
            drafts_item = drafts_item_data.to_dict()
            drafts.append(drafts_item)

        model = self.model

        usage = self.usage.to_dict()

        refusal: None | str
        refusal = self.refusal

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "drafts": drafts,
                "model": model,
                "usage": usage,
                "refusal": refusal,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.draft import Draft  # noqa: PLC0415
        from ..models.usage import Usage  # noqa: PLC0415

        d = dict(src_dict)
        drafts = []
        _drafts = d.pop("drafts")
        for drafts_item_data in _drafts:
            drafts_item = Draft.from_dict(drafts_item_data)

            drafts.append(drafts_item)

        model = d.pop("model")

        usage = Usage.from_dict(d.pop("usage"))

        def _parse_refusal(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        refusal = _parse_refusal(d.pop("refusal"))

        gather_result = cls(
            drafts=drafts,
            model=model,
            usage=usage,
            refusal=refusal,
        )

        gather_result.additional_properties = d
        return gather_result

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
