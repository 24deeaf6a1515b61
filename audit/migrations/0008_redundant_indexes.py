"""Three indexes every audit event kept up and no read needed: the action's
two (audit_action_time_idx leads with it; the pattern one served LIKE, which
nothing asks) and the subject type's (the subject index leads with it). An
event's insert had twelve indexes to update, now nine. Dropped concurrently
on PostgreSQL (hence not atomic); the fields' db_index is state only, so no
table is rebuilt (SQLite: its append-only trigger stays) and no foreign key
is revalidated."""

import django.db.models.deletion
from django.db import migrations, models

from lib.migrations import DropIndexesConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("audit", "0007_search_indexes"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="auditevent",
                    name="action",
                    field=models.CharField(max_length=64),
                ),
                migrations.AlterField(
                    model_name="auditevent",
                    name="subject_type",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="contenttypes.contenttype",
                    ),
                ),
            ],
            database_operations=[
                DropIndexesConcurrently(
                    table="audit_auditevent",
                    indexes={
                        "audit_auditevent_action_2131bb77": '("action")',
                        "audit_auditevent_action_2131bb77_like": (
                            '("action" varchar_pattern_ops)'
                        ),
                        "audit_auditevent_subject_type_id_a4ecf56f": '("subject_type_id")',
                    },
                ),
            ],
        ),
    ]
