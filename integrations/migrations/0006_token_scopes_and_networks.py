"""Token scopes and client networks. Every token that exists keeps working as
before: AddField fills the existing rows with the default, both scopes and no
network limit (integrations.models.scopes_before_read: frozen, so a database
that applies this migration after `read` was added does not give old tokens
`read` too; 0007 sets the default of tokens minted from then on)."""

import integrations.models
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('integrations', '0005_token_expiry_and_unique_live_names'),
    ]

    operations = [
        migrations.AddField(
            model_name='apitoken',
            name='networks',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name='apitoken',
            name='scopes',
            field=models.JSONField(default=integrations.models.scopes_before_read),
        ),
    ]
