"""The headless runs' kernel client (kit/report/kernel.py): a reply is found by polling in
slices, a wait with nothing to receive still ends at its timeout, and papermill's runs use it."""

from __future__ import annotations

import asyncio
import time
from queue import Empty

import pytest
import zmq
import zmq.asyncio
from jupyter_client.session import Session

from kit.report import kernel


@pytest.fixture
def pair():
    """A real zmq socket pair on 127.0.0.1: the kernel's end sends, the channel receives."""
    ctx = zmq.asyncio.Context()
    recv = ctx.socket(zmq.PAIR)
    port = recv.bind_to_random_port("tcp://127.0.0.1")
    send = ctx.socket(zmq.PAIR)
    send.connect(f"tcp://127.0.0.1:{port}")
    yield send, recv
    send.close(0)
    recv.close(0)
    ctx.term()


def test_a_message_sent_during_the_wait_is_returned_within_a_slice(pair):
    send, recv = pair
    session = Session(key=b"k")
    channel = kernel.SlicedChannel(recv, session)

    async def scenario():
        async def reply_later():
            await asyncio.sleep(0.3)
            session.send(send, "execute_reply", {"status": "ok"})

        task = asyncio.ensure_future(reply_later())
        t0 = time.monotonic()
        msg = await channel.get_msg(timeout=30)
        await task
        return msg, time.monotonic() - t0

    msg, waited = asyncio.run(scenario())
    assert msg["msg_type"] == "execute_reply" and msg["content"] == {"status": "ok"}
    assert waited < 0.3 + 2 * kernel.POLL_SLICE_S


def test_nothing_to_receive_is_empty_at_the_timeout_not_before(pair):
    _, recv = pair
    channel = kernel.SlicedChannel(recv, Session(key=b"k"))
    t0 = time.monotonic()
    with pytest.raises(Empty):
        asyncio.run(channel.get_msg(timeout=1.2))
    assert 1.2 <= time.monotonic() - t0 < 1.2 + kernel.POLL_SLICE_S + 0.5


def test_the_manager_hands_out_the_sliced_client():
    km = kernel.KernelManager()
    client = km.client()
    assert isinstance(client, kernel.SlicedClient)
    assert client.shell_channel_class is kernel.SlicedChannel
    assert client.iopub_channel_class is kernel.SlicedChannel
