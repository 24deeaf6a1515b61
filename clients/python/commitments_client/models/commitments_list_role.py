from enum import StrEnum


class CommitmentsListRole(StrEnum):
    ASSIGNEE = "assignee"
    ASSIGNER = "assigner"

    def __str__(self) -> str:
        return str(self.value)
