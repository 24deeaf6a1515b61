"""Token expiry, and names unique among a user's live tokens.

Live tokens that already share a name with a newer live token of the same
user (made by reloading the mint page) keep working; they are renamed to
"<name> (<prefix>)" so the constraint can hold and their owner can tell them
apart. The newest keeps the name.
"""

from django.conf import settings
from django.db import migrations, models


def rename_duplicate_live_names(apps, schema_editor):
    ApiToken = apps.get_model("integrations", "ApiToken")
    max_length = ApiToken._meta.get_field("name").max_length
    seen = set()
    live = ApiToken.objects.filter(revoked_at__isnull=True).order_by("-created_at", "-pk")
    for token in live.only("pk", "user_id", "name", "prefix").iterator():
        key = (token.user_id, token.name)
        if key not in seen:
            seen.add(key)
            continue
        suffix = f" ({token.prefix})"
        token.name = token.name[: max_length - len(suffix)] + suffix
        seen.add((token.user_id, token.name))
        token.save(update_fields=["name"])


class Migration(migrations.Migration):

    dependencies = [
        ('integrations', '0004_notifications_move_out'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(rename_duplicate_live_names, migrations.RunPython.noop),
        migrations.AddField(
            model_name='apitoken',
            name='expires_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='apitoken',
            name='expiry_recorded_at',
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.AddConstraint(
            model_name='apitoken',
            constraint=models.UniqueConstraint(condition=models.Q(('revoked_at__isnull', True)), fields=('user', 'name'), name='apitoken_live_name_unique'),
        ),
    ]
