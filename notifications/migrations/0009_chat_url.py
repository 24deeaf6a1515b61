# The Slack/Teams address a nudge is posted to is the "chat URL" (never
# "webhook", which is the outbound webhooks app's word). Renames the column;
# the encrypted values are kept as they are.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('notifications', '0008_attempt_outcome_shared'),
    ]

    operations = [
        migrations.RenameField(
            model_name='notificationchannel',
            old_name='webhook_url',
            new_name='chat_url',
        ),
    ]
