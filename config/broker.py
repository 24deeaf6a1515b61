"""Kombu's Redis transport with two fixes.

1. A message whose ack Redis did not answer still frees its prefetch slot.

Stock kombu (`kombu.transport.redis.QoS.ack`) removes the message from the
unacked index first and frees the slot only if that succeeded. When Redis is
paused or slow for longer than the socket timeout at the moment a task
finishes, the removal raises, Celery logs "Couldn't ack", and the slot stays
taken for good: with a prefetch of one the worker never takes another message,
although its connection is fine (seen under load with `CLIENT PAUSE`).

Here the slot is freed whatever Redis answered. A message whose removal did
fail stays in Redis's unacked index and is restored to the queue after the
visibility timeout, so its task runs once more; every task tolerates that
(relay.tasks, notifications.tasks, webhooks.tasks).

2. A channel whose connection was already released fails with a connection
error, not an AttributeError, so the worker survives Redis going away.

When Redis goes while a task runs (its message unacknowledged) and the
worker's consumer is waiting in BRPOP, the remote-control channel's
subscription often notices first. Celery then closes the connection
(`Consumer.on_connection_error_after_connected`: `collect()`, then
`close()`). The task channel's first close stops at reading the pending
BRPOP (a connection error, swallowed), before it is marked closed; the
remote-control channel's close fails too (deleting its auto-delete queue),
which ends kombu's loop over the channels; and `collect()` releases the
transport (`transport.client = None`). Celery's `close()` then closes the
task channel for real: restoring its unacknowledged message asks for a new
Redis pool, and `_connparams` reads `None.hostname`. An AttributeError is not
a connection error, so Celery calls it unrecoverable and the worker exits
(stock kombu does the same; kombu issues 582 and 970 are this family).

Here `_connparams` on a released connection raises redis's ConnectionError:
kombu's `maybe_close_channel` and Celery's `ignore_errors` swallow it, the
close completes, and the worker reconnects once Redis is back. The message
that could not be restored is the one Redis lost anyway (or, if Redis kept
it, it waits in the unacked index for the visibility timeout); its task was
terminated (CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS) and
the outbox sweep queues its row again.

Selected by `CELERY_BROKER_TRANSPORT` in config/settings.py when REDIS_URL is
set. Tested in tests/config/test_broker.py (the transport, stock kombu as the
control) and tests/relay/test_worker.py (a real worker).
"""

from __future__ import annotations

from kombu.transport import redis, virtual
from redis.exceptions import ConnectionError as RedisConnectionError


class QoS(redis.QoS):
    def ack(self, delivery_tag):
        try:
            self._remove_from_indices(delivery_tag).execute()
        finally:
            virtual.QoS.ack(self, delivery_tag)

    def reject(self, delivery_tag, requeue=False):
        try:
            if requeue:
                self.restore_by_tag(delivery_tag, leftmost=True)
            else:
                self._remove_from_indices(delivery_tag).execute()
        finally:
            virtual.QoS.ack(self, delivery_tag)


class Channel(redis.Channel):
    QoS = QoS

    def _connparams(self, asynchronous=False):
        # `connection` is the transport (None once kombu closed this channel);
        # its `client`, the kombu Connection (None once released).
        if self.connection is None or self.connection.client is None:
            raise RedisConnectionError("This channel's broker connection was released.")
        return super()._connparams(asynchronous=asynchronous)


class Transport(redis.Transport):
    Channel = Channel
