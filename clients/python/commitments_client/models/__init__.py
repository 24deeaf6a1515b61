"""Contains all the data models used in inputs/outputs"""

from .actor_kind_enum import ActorKindEnum
from .commitment import Commitment
from .commitment_detail import CommitmentDetail
from .commitment_page import CommitmentPage
from .commitment_status_enum import CommitmentStatusEnum
from .commitments_list_role import CommitmentsListRole
from .commitments_list_status import CommitmentsListStatus
from .confidence_enum import ConfidenceEnum
from .did_enum import DidEnum
from .draft import Draft
from .error_envelope import ErrorEnvelope
from .error_envelope_details import ErrorEnvelopeDetails
from .gather_request import GatherRequest
from .gather_result import GatherResult
from .git_hub_form_delivery_request import GitHubFormDeliveryRequest
from .history_entry import HistoryEntry
from .hook_action import HookAction
from .hook_result import HookResult
from .inbox_created import InboxCreated
from .inbox_request import InboxRequest
from .sync_request import SyncRequest
from .sync_result import SyncResult
from .sync_target_status_enum import SyncTargetStatusEnum
from .tracker_hook_json_body import TrackerHookJsonBody
from .usage import Usage

__all__ = (
    "ActorKindEnum",
    "Commitment",
    "CommitmentDetail",
    "CommitmentPage",
    "CommitmentsListRole",
    "CommitmentsListStatus",
    "CommitmentStatusEnum",
    "ConfidenceEnum",
    "DidEnum",
    "Draft",
    "ErrorEnvelope",
    "ErrorEnvelopeDetails",
    "GatherRequest",
    "GatherResult",
    "GitHubFormDeliveryRequest",
    "HistoryEntry",
    "HookAction",
    "HookResult",
    "InboxCreated",
    "InboxRequest",
    "SyncRequest",
    "SyncResult",
    "SyncTargetStatusEnum",
    "TrackerHookJsonBody",
    "Usage",
)
