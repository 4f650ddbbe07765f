"""The kernel client the headless runs use: jupyter_client's own, except that a wait for a reply
polls in short slices.

A widget cell sends a burst of comm messages on IOPub; now and then the shell socket's
execute_reply then arrives without waking the poll that waits for it (pyzmq's edge-triggered
socket FD under asyncio), and nbclient sits until the cell's whole timeout has passed, finds the
reply then and goes on: a notebook that takes 4 s took 64 s or 124 s (nbclient#312, seen here
with pyzmq 27.3, jupyter_client 8.10, nbclient 0.11). Polling in slices finds the reply within
one slice, and a timeout still means what it says.
"""

from __future__ import annotations

import time
from queue import Empty
from typing import Any

from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.manager import AsyncKernelManager
from traitlets import Type

POLL_SLICE_S = 0.5  # how late a missed wake-up can make a reply, at most


class SlicedChannel(AsyncZMQSocketChannel):
    """A socket channel whose `get_msg` polls in `POLL_SLICE_S` slices up to its timeout."""

    async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:
        assert self.socket is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL_SLICE_S if deadline is None else deadline - time.monotonic()
            if await self.socket.poll(int(max(0.0, min(left, POLL_SLICE_S)) * 1000)):
                return await self._recv()
            if deadline is not None and time.monotonic() >= deadline:
                raise Empty


class SlicedClient(AsyncKernelClient):
    shell_channel_class = Type(SlicedChannel)  # type: ignore[assignment]
    iopub_channel_class = Type(SlicedChannel)  # type: ignore[assignment]


class KernelManager(AsyncKernelManager):
    """nbclient's default manager, handing out a `SlicedClient` (papermill passes
    `kernel_manager_class` through to nbclient)."""

    client_class = "kit.report.kernel.SlicedClient"  # type: ignore[assignment]
    client_factory = Type(SlicedClient)  # type: ignore[assignment]
