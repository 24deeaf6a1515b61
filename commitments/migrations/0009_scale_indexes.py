"""The reminders' indexes (found by benchmarks/scale.py: at a million
commitments each reminders run read the whole table). Built concurrently on
PostgreSQL, so a large table keeps taking writes meanwhile
(lib.migrations.AddIndexConcurrently; hence not atomic)."""

from django.db import migrations, models

from lib.migrations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("commitments", "0008_read_api_indexes"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="commitment",
            index=models.Index(
                condition=models.Q(("status", "Active")),
                fields=["deadline"],
                name="cmt_active_deadline_idx",
            ),
        ),
        AddIndexConcurrently(
            model_name="commitment",
            index=models.Index(
                condition=models.Q(("status", "Pending_Handshake")),
                fields=["updated_at"],
                name="cmt_waiting_changed_idx",
            ),
        ),
    ]
