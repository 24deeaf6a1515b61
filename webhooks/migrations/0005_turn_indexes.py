"""The turns' indexes (issue 29): a person's nudges, or an endpoint's
webhook deliveries, still to go, so that whose turn it is reads the line, not
the whole history (the sustained run's one assigner had thousands). Built
concurrently on PostgreSQL (lib.migrations.AddIndexConcurrently; hence not
atomic)."""

from django.db import migrations, models

from lib.migrations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False


    dependencies = [
        ('commitments', '0010_commitment_created_at_set_by_services'),
        ('webhooks', '0004_endpoint_events'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='webhookdelivery',
            index=models.Index(condition=models.Q(('status__in', ['pending', 'sending'])), fields=['endpoint', 'created_at'], name='webhook_endpoint_line_idx'),
        ),
    ]
