# The models of notification channels, deliveries and attempts, taken over
# from `integrations` (whose 0004 renamed their tables): state only, no
# table is created. Content types (and so permissions and audit subjects)
# move with them.

import django.db.models.deletion
import django.utils.timezone
import lib.crypto
import uuid
from django.conf import settings
from django.db import migrations, models

MODELS = ("notificationchannel", "delivery", "deliveryattempt")


def move_content_types(apps, schema_editor, source="integrations", target="notifications"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not ContentType.objects.filter(app_label=target, model=model).exists():
            ContentType.objects.filter(app_label=source, model=model).update(app_label=target)


def move_content_types_back(apps, schema_editor):
    move_content_types(apps, schema_editor, source="notifications", target="integrations")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("commitments", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("integrations", "0004_notifications_move_out"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
            migrations.CreateModel(
                name='Delivery',
                fields=[
                    ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                    ('purpose', models.CharField(choices=[('nudge', 'Nudge')], max_length=16)),
                    ('channel', models.CharField(choices=[('email', 'E-mail'), ('slack', 'Slack'), ('teams', 'Microsoft Teams')], max_length=16)),
                    ('status', models.CharField(choices=[('pending', 'Pending'), ('sending', 'Sending'), ('delivered', 'Delivered'), ('failed', 'Failed')], default='pending', max_length=16)),
                    ('attempts', models.PositiveIntegerField(default=0)),
                    ('next_attempt_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('claimed_until', models.DateTimeField(blank=True, null=True)),
                    ('enqueued_at', models.DateTimeField(blank=True, null=True)),
                    ('delivered_at', models.DateTimeField(blank=True, null=True)),
                    ('last_error', models.CharField(blank=True, max_length=1000)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                    ('event', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='commitments.outboxevent')),
                    ('recipient', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'verbose_name_plural': 'deliveries',
                    'ordering': ['-created_at'],
                },
            ),
            migrations.CreateModel(
                name='DeliveryAttempt',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('channel', models.CharField(choices=[('email', 'E-mail'), ('slack', 'Slack'), ('teams', 'Microsoft Teams')], max_length=16)),
                    ('started_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('duration_ms', models.PositiveIntegerField(blank=True, null=True)),
                    ('outcome', models.CharField(blank=True, choices=[('delivered', 'Delivered'), ('transient', 'Failed, will retry'), ('permanent', 'Failed for good'), ('interrupted', 'Interrupted (worker lost)')], max_length=16)),
                    ('status_code', models.PositiveIntegerField(blank=True, null=True)),
                    ('error', models.CharField(blank=True, max_length=1000)),
                    ('delivery', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='attempt_log', to='notifications.delivery')),
                ],
                options={
                    'ordering': ['started_at', 'id'],
                },
            ),
            migrations.CreateModel(
                name='NotificationChannel',
                fields=[
                    ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                    ('kind', models.CharField(choices=[('email', 'E-mail'), ('slack', 'Slack'), ('teams', 'Microsoft Teams')], default='email', max_length=16)),
                    ('webhook_url', lib.crypto.EncryptedTextField(blank=True, default='')),
                    ('broken_at', models.DateTimeField(blank=True, null=True)),
                    ('broken_reason', models.CharField(blank=True, max_length=500)),
                    ('last_test_at', models.DateTimeField(blank=True, null=True)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                    ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='notification_channel', to=settings.AUTH_USER_MODEL)),
                ],
            ),
            migrations.AddIndex(
                model_name='delivery',
                index=models.Index(condition=models.Q(('status', 'pending')), fields=['next_attempt_at'], name='delivery_pending_due_idx'),
            ),
            migrations.AddIndex(
                model_name='delivery',
                index=models.Index(condition=models.Q(('status', 'sending')), fields=['claimed_until'], name='delivery_sending_lease_idx'),
            ),
            migrations.AddIndex(
                model_name='delivery',
                index=models.Index(fields=['recipient', '-created_at'], name='delivery_recipient_idx'),
            ),
            migrations.AddConstraint(
                model_name='delivery',
                constraint=models.UniqueConstraint(fields=('event', 'recipient', 'purpose'), name='delivery_once_per_event'),
            ),
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
