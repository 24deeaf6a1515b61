from enum import StrEnum


class SyncTargetStatusEnum(StrEnum):
    COMPLETED = "Completed"

    def __str__(self) -> str:
        return str(self.value)
