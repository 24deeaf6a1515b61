from django.apps import AppConfig


class TrackersConfig(AppConfig):
    name = "trackers"
    default_auto_field = "django.db.models.BigAutoField"
