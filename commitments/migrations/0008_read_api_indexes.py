"""Indexes for the read API's list (GET /api/v1/commitments): newest change
first on each side (assigner, assignee), with and without a status, so every
filter is served by an index (tests/integrations/test_read_api_plans.py)."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('commitments', '0007_conversation'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name='commitment',
            index=models.Index(fields=['assigner', '-updated_at', '-id'], name='cmt_assigner_changed_idx'),
        ),
        migrations.AddIndex(
            model_name='commitment',
            index=models.Index(fields=['assignee', '-updated_at', '-id'], name='cmt_assignee_changed_idx'),
        ),
        migrations.AddIndex(
            model_name='commitment',
            index=models.Index(fields=['assigner', 'status', '-updated_at', '-id'], name='cmt_assigner_st_changed_idx'),
        ),
        migrations.AddIndex(
            model_name='commitment',
            index=models.Index(fields=['assignee', 'status', '-updated_at', '-id'], name='cmt_assignee_st_changed_idx'),
        ),
    ]
