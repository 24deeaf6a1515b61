from integrations.admin import notifications, tokens  # noqa: F401
