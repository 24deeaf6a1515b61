"""The admin's audit list filtered by action or by kind of actor, newest first
(found by benchmarks/scale.py at five million rows). Built concurrently on
PostgreSQL: the trail keeps taking its inserts meanwhile
(lib.migrations.AddIndexConcurrently; hence not atomic)."""

from django.db import migrations, models

from lib.migrations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("audit", "0005_model_key_actions"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="auditevent",
            index=models.Index(
                fields=["action", "occurred_at", "id"], name="audit_action_time_idx"
            ),
        ),
        AddIndexConcurrently(
            model_name="auditevent",
            index=models.Index(
                fields=["actor_kind", "occurred_at", "id"], name="audit_actor_time_idx"
            ),
        ),
    ]
