"""Errors of gather's services, for the pages and commands to show."""

from __future__ import annotations

__all__ = ["ModelKeyError"]


class ModelKeyError(ValueError):
    """A key, provider or model that cannot be stored; `message` is for people."""

    def __init__(self, message: str, *, field: str = "key") -> None:
        super().__init__(message)
        self.message = message
        self.field = field
