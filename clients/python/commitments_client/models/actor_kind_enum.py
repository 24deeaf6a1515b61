from enum import StrEnum


class ActorKindEnum(StrEnum):
    API_TOKEN = "api_token"
    SYSTEM = "system"
    USER = "user"

    def __str__(self) -> str:
        return str(self.value)
