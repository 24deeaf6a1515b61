"""Connections of a test's own to the outbox's notifications (PostgreSQL)."""

from __future__ import annotations

import psycopg
from django.db import connection

from commitments.outbox import OUTBOX_CHANNEL, OUTBOX_WAITERS, outbox_relay_waits


def connect() -> psycopg.Connection:
    """A connection of its own to the test's database, in autocommit."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**params, autocommit=True)


def listening_as_a_relay(relay: str = "test") -> psycopg.Connection:
    """A connection that LISTENs on the outbox's channel and says it waits,
    as a relay does (writers notify only then: migration commitments 0012),
    no other relay's row left."""
    conn = connect()
    conn.execute(f"DELETE FROM {OUTBOX_WAITERS}")
    conn.execute(f"LISTEN {OUTBOX_CHANNEL}")
    outbox_relay_waits(conn, relay=relay, seconds=60)
    return conn
