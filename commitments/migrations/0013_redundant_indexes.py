"""Three indexes every write of a commitment kept up and no read needed: the
assigner's and the assignee's own (each composite index in Meta leads with
one of them), and the invitation's, on a column most rows leave empty, now
partial (cmt_invitation_idx). A commitment's write had thirteen indexes to
update, now ten. Dropped and built concurrently on PostgreSQL (hence not
atomic); the fields' db_index is state only, so no foreign key is dropped
and revalidated."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from lib.migrations import AddIndexConcurrently, DropIndexesConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("commitments", "0012_outbox_notify_only_a_waiting_relay"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="commitment",
            index=models.Index(
                condition=models.Q(("invitation__isnull", False)),
                fields=["invitation"],
                name="cmt_invitation_idx",
            ),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="commitment",
                    name="assignee",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="commitments_owed",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="commitment",
                    name="assigner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="commitments_assigned",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="commitment",
                    name="invitation",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="commitments",
                        to="commitments.invitation",
                    ),
                ),
            ],
            database_operations=[
                DropIndexesConcurrently(
                    table="commitments_commitment",
                    indexes={
                        "commitments_commitment_assignee_id_ecde0fb4": '("assignee_id")',
                        "commitments_commitment_assigner_id_dd427648": '("assigner_id")',
                        "commitments_commitment_invitation_id_bd15b3de": '("invitation_id")',
                    },
                ),
            ],
        ),
    ]
