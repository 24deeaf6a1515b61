from enum import StrEnum


class CommitmentStatusEnum(StrEnum):
    ACTIVE = "Active"
    COMPLETED = "Completed"
    DRAFT = "Draft"
    PENDING_HANDSHAKE = "Pending_Handshake"
    REFUSED = "Refused"

    def __str__(self) -> str:
        return str(self.value)
