"""An endpoint chooses its events (issue 26, point 7). Every endpoint there
was keeps exactly what it received: the contract's four events
(webhooks.models.contract_events, evaluated once for the existing rows)."""

from django.db import migrations, models

import webhooks.models


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0003_attempt_outcome_shared"),
    ]

    operations = [
        migrations.AddField(
            model_name="webhookendpoint",
            name="events",
            field=models.JSONField(default=webhooks.models.contract_events),
        ),
    ]
