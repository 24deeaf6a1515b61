# The nudge's models take the glossary's names (a nudge channel, a nudge
# delivery and its attempts; webhooks have WebhookDelivery/WebhookAttempt):
# Delivery -> NudgeDelivery, DeliveryAttempt -> NudgeAttempt,
# NotificationChannel -> NudgeChannel, and the feature "Send a test" is a
# test nudge: ChannelTest -> TestNudge. RenameModel renames the tables as well
# (notifications_delivery -> notifications_nudgedelivery, ...), so the tables
# say what the models say; no row is copied or lost. The content types keep
# their ids (audit rows point at them), and their permissions take the new
# codenames (change_delivery -> change_nudgedelivery), so a group given them
# keeps them.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

RENAMED = [
    ("delivery", "nudgedelivery", "delivery", "nudge delivery"),
    ("deliveryattempt", "nudgeattempt", "delivery attempt", "nudge attempt"),
    ("notificationchannel", "nudgechannel", "notification channel", "nudge channel"),
    ("channeltest", "testnudge", "channel test", "test nudge"),
]
ACTIONS = ("add", "change", "delete", "view")


def rename_types(apps, *, old: int, new: int) -> None:
    """Content types and permissions from one set of names to the other.
    `manage.py migrate` renames the content types itself (contenttypes'
    RenameContentType, right after each RenameModel); a migration run without
    it (tests/notifications/test_migration.py) relies on this, so both steps
    skip what is already done."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    for names in RENAMED:
        source, target = names[old], names[new]
        label = names[new + 2]
        if not ContentType.objects.filter(app_label="notifications", model=target).exists():
            ContentType.objects.filter(app_label="notifications", model=source).update(
                model=target
            )
        content_type = ContentType.objects.filter(app_label="notifications", model=target).first()
        if content_type is None:
            continue
        for action in ACTIONS:
            if Permission.objects.filter(
                content_type=content_type, codename=f"{action}_{target}"
            ).exists():
                continue
            Permission.objects.filter(
                content_type=content_type, codename=f"{action}_{source}"
            ).update(codename=f"{action}_{target}", name=f"Can {action} {label}")


def forwards(apps, schema_editor):
    rename_types(apps, old=0, new=1)


def backwards(apps, schema_editor):
    rename_types(apps, old=1, new=0)


class Migration(migrations.Migration):

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("notifications", "0009_chat_url"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RenameModel(old_name="DeliveryAttempt", new_name="NudgeAttempt"),
        migrations.RenameModel(old_name="Delivery", new_name="NudgeDelivery"),
        migrations.AlterModelOptions(
            name="nudgedelivery",
            options={"ordering": ["-created_at"], "verbose_name_plural": "nudge deliveries"},
        ),
        migrations.RenameModel(old_name="NotificationChannel", new_name="NudgeChannel"),
        migrations.AlterField(
            model_name="nudgechannel",
            name="user",
            field=models.OneToOneField(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="nudge_channel",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RenameModel(old_name="ChannelTest", new_name="TestNudge"),
        migrations.AlterField(
            model_name="testnudge",
            name="user",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="test_nudges",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
