"""ProviderKey becomes ModelKey (the project's word for a user's own
language-model key): the table, its constraints' names, the reverse name on
the user, and the admin permissions, whose codenames Django does not rename
by itself. Rows, keys and the audit trail (its content type is renamed with
the model) stay as they are."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

ACTIONS = ("add", "change", "delete", "view")


def _rename_permissions(apps, old: str, new: str, old_words: str, new_words: str) -> None:
    Permission = apps.get_model("auth", "Permission")
    for action in ACTIONS:
        Permission.objects.filter(
            content_type__app_label="gather", codename=f"{action}_{old}"
        ).update(codename=f"{action}_{new}", name=f"Can {action} {new_words}")


def forwards(apps, schema_editor):
    _rename_permissions(apps, "providerkey", "modelkey", "provider key", "model key")


def backwards(apps, schema_editor):
    _rename_permissions(apps, "modelkey", "providerkey", "model key", "provider key")


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("gather", "0001_provider_keys"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RenameModel(old_name="ProviderKey", new_name="ModelKey"),
        migrations.AlterField(
            model_name="modelkey",
            name="user",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="model_keys",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RemoveConstraint(model_name="modelkey", name="provider_key_once_per_user"),
        migrations.RemoveConstraint(
            model_name="modelkey", name="provider_key_one_default_per_user"
        ),
        migrations.AddConstraint(
            model_name="modelkey",
            constraint=models.UniqueConstraint(
                fields=("user", "provider"), name="model_key_once_per_user"
            ),
        ),
        migrations.AddConstraint(
            model_name="modelkey",
            constraint=models.UniqueConstraint(
                condition=models.Q(("is_default", True)),
                fields=("user",),
                name="model_key_one_default_per_user",
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
