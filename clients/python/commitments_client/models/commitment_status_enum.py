from enum import StrEnum


class CommitmentStatusEnum(StrEnum):
    ACTIVE = "Active"
    COMPLETED = "Completed"
    DRAFT = "Draft"
    PENDING_HANDSHAKE = "Pending_Handshake"
    REFUSED = "Refused"
    WITHDRAWN = "Withdrawn"

    def __str__(self) -> str:
        return str(self.value)
