"""Give the role the service runs as what it needs, and on the audit trail no more
than appending and reading.

Run by the role that owns the tables (the one that runs `migrate`), after
`migrate`; again after every `migrate` does no harm. On PostgreSQL only.

The service role gets SELECT, INSERT, UPDATE and DELETE on every table of
the schema and the use of its sequences, now and (default privileges) on
whatever the owner creates later; on `audit_auditevent` only SELECT and
INSERT. It owns nothing, so it cannot ALTER, DROP or TRUNCATE a table, nor
drop the append-only trigger: the trail is closed to it even if the trigger
were gone.

    python manage.py grant_service_role commitments_service \\
        --password-from-env POSTGRES_SERVICE_PASSWORD

creates the role (LOGIN, no other attribute) if it does not exist, which
needs CREATEROLE, and sets its password from that variable when given.
"""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from psycopg import sql

from audit.models import AuditEvent

TABLE_PRIVILEGES = "SELECT, INSERT, UPDATE, DELETE"
SEQUENCE_PRIVILEGES = "USAGE, SELECT, UPDATE"
APPEND_ONLY_PRIVILEGES = "SELECT, INSERT"


def grant_statements(role: str, schema: str) -> list[sql.Composed]:
    """The grants, in order: everything normal first, then the audit table narrowed."""
    r, s = sql.Identifier(role), sql.Identifier(schema)
    audit = sql.Identifier(schema, AuditEvent._meta.db_table)
    return [
        sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(s, r),
        sql.SQL(f"GRANT {TABLE_PRIVILEGES} ON ALL TABLES IN SCHEMA {{}} TO {{}}").format(s, r),
        sql.SQL(f"GRANT {SEQUENCE_PRIVILEGES} ON ALL SEQUENCES IN SCHEMA {{}} TO {{}}").format(
            s, r
        ),
        # Tables and sequences the owner creates later (new migrations).
        sql.SQL(
            f"ALTER DEFAULT PRIVILEGES IN SCHEMA {{}} GRANT {TABLE_PRIVILEGES} ON TABLES TO {{}}"
        ).format(s, r),
        sql.SQL(
            f"ALTER DEFAULT PRIVILEGES IN SCHEMA {{}} "
            f"GRANT {SEQUENCE_PRIVILEGES} ON SEQUENCES TO {{}}"
        ).format(s, r),
        # The audit trail: append and read, nothing else.
        sql.SQL("REVOKE ALL ON TABLE {} FROM {}").format(audit, r),
        sql.SQL(f"GRANT {APPEND_ONLY_PRIVILEGES} ON TABLE {{}} TO {{}}").format(audit, r),
    ]


class Command(BaseCommand):
    help = (
        "Grant ROLE (the role web and workers connect as) normal privileges on every "
        "table, and only SELECT and INSERT on the audit trail. PostgreSQL only; run "
        "as the owner of the tables after migrate."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("role")
        parser.add_argument(
            "--password-from-env",
            metavar="VARIABLE",
            help="Set ROLE's password from this environment variable (creating ROLE if needed).",
        )

    def handle(self, *args, role: str, password_from_env: str | None, **options) -> None:
        if connection.vendor != "postgresql":
            raise CommandError("Database roles and grants are for PostgreSQL only.")
        password = None
        if password_from_env:
            password = os.environ.get(password_from_env, "")
            if not password:
                raise CommandError(f"{password_from_env} is not set or empty.")

        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT current_user, current_schema()")
            owner, schema = cursor.fetchone()
            if role == owner:
                raise CommandError(
                    f"{role} runs this command and owns the tables: the service needs a role "
                    "of its own."
                )
            cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", [role])
            row = cursor.fetchone()
            if row is None:
                self._create_role(cursor, role, password)
            elif row[0]:
                raise CommandError(f"{role} is a superuser: privileges do not bind it.")
            elif password is not None:
                cursor.execute(
                    sql.SQL("ALTER ROLE {} PASSWORD {}")
                    .format(sql.Identifier(role), sql.Literal(password))
                    .as_string(cursor.connection)
                )
            for statement in grant_statements(role, schema):
                cursor.execute(statement.as_string(cursor.connection))
            cursor.execute("SELECT has_schema_privilege(%s, %s, 'CREATE')", [role, schema])
            may_create = cursor.fetchone()[0]

        if may_create:
            self.stderr.write(
                self.style.WARNING(
                    f"{role} may create tables in schema {schema} (PostgreSQL before 15 lets "
                    f"everyone): run REVOKE CREATE ON SCHEMA {schema} FROM PUBLIC as its owner."
                )
            )
        self.stdout.write(
            f"{role}: normal privileges on the tables of {schema}, SELECT and INSERT only on "
            f"{AuditEvent._meta.db_table}."
        )

    def _create_role(self, cursor, role: str, password: str | None) -> None:
        statement = sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role))
        if password is not None:
            statement = sql.SQL("{} PASSWORD {}").format(statement, sql.Literal(password))
        cursor.execute(statement.as_string(cursor.connection))
