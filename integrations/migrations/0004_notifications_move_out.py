# Notification channels, deliveries and their attempts move to the
# `notifications` app: their tables are renamed and the models leave this
# app's state; notifications 0001 takes them over. No row is copied or lost.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("integrations", "0003_notification_test_interval"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.AlterModelTable("notificationchannel", "notifications_notificationchannel"),
                migrations.AlterModelTable("delivery", "notifications_delivery"),
                migrations.AlterModelTable("deliveryattempt", "notifications_deliveryattempt"),
            ],
            state_operations=[
                migrations.DeleteModel("DeliveryAttempt"),
                migrations.DeleteModel("Delivery"),
                migrations.DeleteModel("NotificationChannel"),
            ],
        ),
    ]
