from enum import StrEnum


class DidEnum(StrEnum):
    COMPLETED = "completed"
    CREATED = "created"
    KEPT = "kept"
    MOVED = "moved"
    NOTED = "noted"
    RECORDED = "recorded"
    RENEGOTIATED = "renegotiated"
    SKIPPED = "skipped"
    WITHDRAWN = "withdrawn"

    def __str__(self) -> str:
        return str(self.value)
