"""config.broker: an ack that Redis does not answer must not stall a worker,
and a worker's connection torn down after Redis went must not end the worker.

A real Redis server of the test's own, paused with CLIENT PAUSE while a
message is acknowledged, or stopped while a message is unacknowledged. Stock
kombu is run too, as the control: it keeps the prefetch slot taken, which is
how a worker stopped taking work in CI, and it raises the AttributeError that
made a worker exit in benchmarks/faults.py.
"""

from __future__ import annotations

import contextlib
import subprocess

import pytest
import redis
from kombu import Connection, Exchange, Queue


def take_one_message(port: int, transport: str):
    connection = Connection(
        f"redis://127.0.0.1:{port}/0",
        transport=transport,
        transport_options={"socket_timeout": 0.5, "socket_connect_timeout": 0.5},
    )
    channel = connection.channel()
    queue = Queue("broker-test", Exchange("broker-test", type="direct"), "broker-test")
    connection.Producer(channel).publish(
        {"n": 1}, exchange=queue.exchange, routing_key="broker-test", declare=[queue]
    )
    channel.basic_qos(0, 1, False)  # prefetch one, as the workers run
    message = queue(channel).get(no_ack=False)
    assert message is not None
    assert not channel.qos.can_consume()  # the one slot is taken
    return connection, channel, message


def pause(port: int, milliseconds: int) -> None:
    subprocess.run(
        ["redis-cli", "-p", str(port), "CLIENT", "PAUSE", str(milliseconds), "ALL"],
        check=True,
        stdout=subprocess.DEVNULL,
    )


@pytest.mark.processes
@pytest.mark.parametrize(
    ("transport", "slot_freed"),
    [("config.broker:Transport", True), ("redis", False)],
    ids=["ours", "stock-kombu"],
)
def test_an_ack_redis_does_not_answer_still_frees_the_prefetch_slot(
    private_redis, transport, slot_freed
):
    connection, channel, message = take_one_message(private_redis, transport)
    try:
        pause(private_redis, 1500)
        with pytest.raises(redis.exceptions.TimeoutError):
            message.ack()
        assert channel.qos.can_consume() is slot_freed
    finally:
        connection.release()


@pytest.mark.processes
def test_a_normal_ack_removes_the_message_from_the_unacked_index(private_redis):
    connection, channel, message = take_one_message(private_redis, "config.broker:Transport")
    try:
        client = redis.Redis(port=private_redis)
        assert client.hlen("unacked") == 1
        message.ack()
        assert channel.qos.can_consume()
        assert client.hlen("unacked") == 0
        client.close()
    finally:
        connection.release()


@pytest.mark.redis
def test_the_workers_and_publishers_use_this_transport():
    from config.broker import Transport
    from config.celery import app

    with app.connection_for_write() as connection:
        assert isinstance(connection.transport, Transport)


def lose_redis_the_way_a_worker_does(redis_server, transport: str) -> None:
    """What a Celery worker's connection holds when Redis goes: a task's message
    taken and not acknowledged, the next BRPOP waiting on the task channel, and
    a second channel subscribed to an auto-delete fanout queue (the remote
    control's). Redis stops; then the consumer's teardown, exactly as Celery's
    `Consumer.on_connection_error_after_connected` runs it."""
    from celery.worker.consumer.consumer import COLLECT_SOCKET_TIMEOUT
    from kombu import Consumer
    from kombu.common import ignore_errors

    connection = Connection(
        f"redis://127.0.0.1:{redis_server.port}/0",
        transport=transport,
        transport_options={"socket_timeout": 2, "socket_connect_timeout": 2},
    )
    tasks = connection.default_channel
    tasks.basic_qos(0, 2, False)  # prefetch two: one task running, room for the next
    queue = Queue("broker-test", Exchange("broker-test", type="direct"), "broker-test")
    taken = []
    Consumer(tasks, [queue], callbacks=[lambda body, message: taken.append(message)]).consume()
    control = Queue("control-test", Exchange("control-test", type="fanout"), auto_delete=True)
    Consumer(connection.channel(), [control], callbacks=[lambda body, message: None]).consume()
    connection.Producer(connection.channel()).publish(
        {"n": 1}, exchange=queue.exchange, routing_key="broker-test", declare=[queue]
    )
    with contextlib.suppress(TimeoutError):
        for _ in range(10):  # the message, and the subscription's confirmation
            connection.drain_events(timeout=0.5)
    assert len(taken) == 1 and not taken[0].acknowledged  # the running task's message
    assert tasks._in_poll  # type: ignore[attr-defined]  # kombu's private flag: the next BRPOP is waiting

    redis_server.stop()
    with contextlib.suppress(Exception):  # Celery ignores whatever collect() raises
        connection.collect(socket_timeout=COLLECT_SOCKET_TIMEOUT)
    ignore_errors(connection, connection.close)  # ignores connection errors only


@pytest.mark.processes
def test_a_worker_connection_torn_down_after_redis_went_closes_without_an_attribute_error(
    redis_server,
):
    lose_redis_the_way_a_worker_does(redis_server, "config.broker:Transport")
    # What the worker does next: connect again once Redis is back, and consume.
    redis_server.start()
    connection, _channel, message = take_one_message(redis_server.port, "config.broker:Transport")
    try:
        assert message.payload == {"n": 1}
        message.ack()
    finally:
        connection.release()


@pytest.mark.processes
def test_stock_kombu_raises_the_attribute_error_that_made_the_worker_exit(redis_server):
    """The control: kombu's own transport, in the same teardown, reads the
    released connection's hostname; Celery calls that unrecoverable."""
    with pytest.raises(AttributeError, match="hostname"):
        lose_redis_the_way_a_worker_does(redis_server, "redis")
