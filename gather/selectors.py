"""Reads for capture. The people a draft may name are the collaborators of
`commitments.selectors` (the New commitment page suggests the same ones)."""

from __future__ import annotations

from commitments.selectors import Collaborator, collaborators_for

__all__ = ["Collaborator", "collaborators_for"]
