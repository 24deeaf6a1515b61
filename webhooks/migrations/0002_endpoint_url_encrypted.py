"""The endpoint URL becomes a secret at rest (issue 16, point 4): the column
turns from varchar to text, every stored URL is encrypted in place under the
newest of FIELD_ENCRYPTION_KEYS, and the field becomes an EncryptedTextField.
Backwards, the URLs are decrypted again."""

import lib.crypto
from django.db import migrations, models


def encrypt_urls(apps, schema_editor):
    # Here the field is a plain TextField: it reads and writes the raw column.
    endpoints = apps.get_model("webhooks", "WebhookEndpoint").objects.using(
        schema_editor.connection.alias
    )
    for pk, url in endpoints.values_list("pk", "url").iterator():
        if url:
            endpoints.filter(pk=pk, url=url).update(url=lib.crypto.encrypt_str(url))


def decrypt_urls(apps, schema_editor):
    endpoints = apps.get_model("webhooks", "WebhookEndpoint").objects.using(
        schema_editor.connection.alias
    )
    for pk, token in endpoints.values_list("pk", "url").iterator():
        if token:
            endpoints.filter(pk=pk).update(url=lib.crypto.decrypt_str(token)[:2000])


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0001_webhook_endpoints_and_deliveries"),
    ]

    operations = [
        migrations.AlterField(
            model_name="webhookendpoint", name="url", field=models.TextField()
        ),
        migrations.RunPython(encrypt_urls, decrypt_urls, elidable=False),
        migrations.AlterField(
            model_name="webhookendpoint",
            name="url",
            field=lib.crypto.EncryptedTextField(),
        ),
    ]
