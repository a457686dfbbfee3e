"""A few service calls at a time per server, the rest waiting in line in the order they came.

A search is CPU work (SQLite, the query embedding, fusion in Python) done in a worker thread. Given a thread
per request (anyio's default allows 40), 32 HTTP clients on 2 cores had 32 searches fighting for the GIL and
the caches at once: hybrid throughput fell from 8 to 32 clients in 4 runs of 4, by 11-29 %, with p99 at
1.6-1.95 s (benchmarks/load.py on nat-brain, benchmarks/HISTORY.md "Throughput as clients grow"). With two calls per
core and the rest queued it rose in 6 runs of 11 and fell by 1-13 % in 5 (noise on that machine is ~10 %),
and p99 fell to 0.9-1.4 s. The queue must be fair: anyio's CapacityLimiter serves waiters first come, first
served; a threading.Semaphore around `run_search`, tried before, is not fair and left some requests waiting 6 s.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread

T = TypeVar("T")

# Two per core: one call can wait on SQLite or the model while another holds the GIL (one per core did no
# better in load.py: 8 -> 32 clients fell in 3 runs of 5).
SLOTS = 2 * (os.cpu_count() or 1)


class ServiceSlots:
    """Runs service calls in worker threads, at most `slots` at once. One per server: an anyio limiter belongs
    to the event loop that first uses it, so the stdio server and the HTTP server (REST routes and /mcp share
    its loop) each hold their own."""

    def __init__(self, slots: int = SLOTS) -> None:
        if slots < 1:
            raise ValueError("slots must be at least 1")
        self.slots = slots
        self._limiter: anyio.CapacityLimiter | None = None

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """`function(*args)` in a worker thread once a slot is free, waiting behind earlier calls."""
        if self._limiter is None:  # made inside the loop, on first use
            self._limiter = anyio.CapacityLimiter(self.slots)
        return await anyio.to_thread.run_sync(partial(function, *args), limiter=self._limiter)
