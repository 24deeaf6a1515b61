"""config.broker: an ack that Redis does not answer must not stall a worker.

A real Redis server of the test's own, paused with CLIENT PAUSE while a
message is acknowledged. Stock kombu is run too, as the control: it keeps the
prefetch slot taken, which is how a worker stopped taking work in CI.
"""

from __future__ import annotations

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
