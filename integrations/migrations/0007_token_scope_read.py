"""The `read` scope: tokens minted from now on get inbox, sync and read
unless their owner chooses fewer. Only the field's default changes (Django
keeps JSONField defaults in Python, so no SQL runs): every stored token keeps
exactly the scopes it had, and no data migration widens one."""

import integrations.models
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('integrations', '0006_token_scopes_and_networks'),
    ]

    operations = [
        migrations.AlterField(
            model_name='apitoken',
            name='scopes',
            field=models.JSONField(default=integrations.models.default_scopes),
        ),
    ]
