"""The project's own source tree, for the tests that read it (docs that cite
modules, app boundaries, who receives which signal): its root and its
top-level packages, the apps in the order of docs/architecture.md's layers
from the bottom."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "config",
    "lib",
    "ratelimits",
    "accounts",
    "audit",
    "commitments",
    "integrations",
    "notifications",
    "relay",
    "gather",
    "webhooks",
    "trackers",
)
