"""server/services/support/slots.py: service calls run in worker threads, at most `slots` at once, the others served in the order
they arrived (a fair queue: an unfair one left requests waiting seconds under load)."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from oracle_server.services.support.slots import SLOTS, ServiceSlots


class Recorder:
    """A service stand-in that records which calls overlapped and the order they started (real threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.started: list[int] = []
        self.threads: set[int] = set()

    def call(self, n: int) -> int:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(n)
            self.threads.add(threading.get_ident())
        time.sleep(0.03)
        with self.lock:
            self.running -= 1
        return n * 10


def run_calls(slots: ServiceSlots, count: int) -> tuple[Recorder, list[int]]:
    recorder = Recorder()
    results: list[int] = []

    async def main() -> None:
        async def one(n: int) -> None:
            results.append(await slots.run(recorder.call, n))

        async with anyio.create_task_group() as group:
            for n in range(count):
                group.start_soon(one, n)

    anyio.run(main)
    return recorder, results


@pytest.mark.parametrize("size", [1, 2, 3])
def test_at_most_slots_calls_at_once_in_arrival_order(size: int) -> None:
    recorder, results = run_calls(ServiceSlots(size), 9)
    assert recorder.most == size  # never more, and the slots are used
    # First come, first served: slots are taken in arrival order; calls that got theirs together may start in
    # either order (their threads race), but none overtakes a call more than `size` places earlier.
    assert sorted(recorder.started) == list(range(9))
    assert all(abs(position - n) < size for position, n in enumerate(recorder.started)), recorder.started
    assert sorted(results) == [n * 10 for n in range(9)]
    assert threading.get_ident() not in recorder.threads  # off the event loop's thread


def test_a_failure_reaches_the_caller_and_frees_its_slot() -> None:
    slots = ServiceSlots(1)

    def fails() -> None:
        raise LookupError("no such note")

    async def main() -> int:
        with pytest.raises(LookupError, match="no such note"):
            await slots.run(fails)
        return await slots.run(lambda: 7)  # the one slot is free again

    assert anyio.run(main) == 7


def test_slots_are_a_positive_count() -> None:
    assert SLOTS >= 2
    with pytest.raises(ValueError):
        ServiceSlots(0)
