from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_envelope_details import ErrorEnvelopeDetails


T = TypeVar("T", bound="ErrorEnvelope")


@_attrs_define
class ErrorEnvelope:
    """The one shape of every error the API returns.

    Attributes:
        error (str): Stable machine-readable name, e.g. `invalid_payload`, `unauthorized`.
        message (str): Human-readable explanation; wording may change.
        details (ErrorEnvelopeDetails | Unset): Validation errors only (and `currentStatus` on `invalid_transition`): a
            flat map from request field (camelCase, as sent) to a message. Its shape is opaque.
    """

    error: str
    message: str
    details: ErrorEnvelopeDetails | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        error = self.error

        message = self.message

        details: dict[str, Any] | Unset = UNSET
        if not isinstance(self.details, Unset):
            details = self.details.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "error": error,
                "message": message,
            }
        )
        if details is not UNSET:
            field_dict["details"] = details

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_envelope_details import ErrorEnvelopeDetails  # noqa: PLC0415

        d = dict(src_dict)
        error = d.pop("error")

        message = d.pop("message")

        _details = d.pop("details", UNSET)
        details: ErrorEnvelopeDetails | Unset
        if isinstance(_details, Unset):
            details = UNSET
        else:
            details = ErrorEnvelopeDetails.from_dict(_details)

        error_envelope = cls(
            error=error,
            message=message,
            details=details,
        )

        error_envelope.additional_properties = d
        return error_envelope

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
