"""Kombu's Redis transport with one fix: a message whose ack Redis did not
answer still frees its prefetch slot.

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

Selected by `CELERY_BROKER_TRANSPORT` in config/settings.py when REDIS_URL is
set.
"""

from __future__ import annotations

from kombu.transport import redis, virtual


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


class Transport(redis.Transport):
    Channel = Channel
