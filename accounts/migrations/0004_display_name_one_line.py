"""A display name is one line (accounts.models.validate_display_name).

Names saved before the rule may hold line breaks or other control characters;
each such name is rewritten as the one line it shows as (lib.text.one_line:
every control character a space, runs of white space folded), cut to the
field's 100 characters. Other names are left exactly as they are. Nudges would
go out anyway (their subjects are folded when built), but a name is shown on
pages and in the admin too, and a form that shows it back must accept it.
"""

import accounts.models
from django.db import migrations, models

from lib.text import has_control_characters, one_line


def fold_names(apps, schema_editor):
    User = apps.get_model("accounts", "User")
    for user in User.objects.exclude(display_name="").only("pk", "display_name").iterator():
        if has_control_characters(user.display_name):
            User.objects.filter(pk=user.pk).update(display_name=one_line(user.display_name)[:100])


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_sessions_without_parked_requests"),
    ]

    operations = [
        migrations.AlterField(
            model_name="user",
            name="display_name",
            field=models.CharField(
                blank=True, max_length=100, validators=[accounts.models.validate_display_name]
            ),
        ),
        migrations.RunPython(fold_names, migrations.RunPython.noop),
    ]
