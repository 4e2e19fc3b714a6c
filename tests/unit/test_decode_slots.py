"""The decode pool's workers go round fairly: a client holds all but one, and when all are busy
the next free one goes to the waiting client that holds the fewest, not to whoever queued first."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine

from sparqlrag.extraction.decode_pool import _FairSlots


async def _decode(
    slots: _FairSlots, order: list[str], client: bytes, name: str, hold: asyncio.Event | None = None
) -> None:
    """A decode of `client`'s, named `name` in `order` when it gets its slot; held until `hold` is set."""
    async with slots.slot(client):
        order.append(name)
        if hold is not None:
            await hold.wait()


def test_a_freed_slot_goes_to_the_waiting_client_holding_fewest() -> None:
    async def run() -> list[str]:
        slots, order = _FairSlots(1), list[str]()
        release = asyncio.Event()

        def decode(client: bytes, name: str, hold: asyncio.Event | None = None) -> Coroutine[None, None, None]:
            return _decode(slots, order, client, name, hold)

        first = asyncio.create_task(decode(b"greedy", "greedy-1", release))
        await asyncio.sleep(0)
        queued = [asyncio.create_task(decode(b"greedy", f"greedy-{n}")) for n in (2, 3)]
        await asyncio.sleep(0)
        other = asyncio.create_task(decode(b"other", "other-1"))
        await asyncio.sleep(0)
        release.set()
        await asyncio.gather(first, *queued, other)
        return order

    assert asyncio.run(run())[:2] == ["greedy-1", "other-1"]


def test_a_cancelled_waiter_gives_up_its_place() -> None:
    async def run() -> list[str]:
        slots, order = _FairSlots(1), list[str]()
        release = asyncio.Event()

        def decode(client: bytes, name: str, hold: asyncio.Event | None = None) -> Coroutine[None, None, None]:
            return _decode(slots, order, client, name, hold)

        first = asyncio.create_task(decode(b"a", "a", release))
        await asyncio.sleep(0)
        gone = asyncio.create_task(decode(b"b", "b"))
        later = asyncio.create_task(decode(b"c", "c"))
        await asyncio.sleep(0)
        gone.cancel()
        release.set()
        await asyncio.gather(first, later)
        return order

    assert asyncio.run(run()) == ["a", "c"]


def test_a_client_leaves_one_slot_for_others() -> None:
    async def run() -> list[str]:
        slots, order = _FairSlots(2), list[str]()
        release = asyncio.Event()
        greedy = [asyncio.create_task(_decode(slots, order, b"greedy", f"greedy-{n}", release)) for n in (1, 2, 3)]
        await asyncio.sleep(0.01)
        other = asyncio.create_task(_decode(slots, order, b"other", "other-1"))
        await asyncio.sleep(0.01)
        running = list(order)
        release.set()
        await asyncio.gather(*greedy, other)
        return running

    assert asyncio.run(run()) == ["greedy-1", "other-1"]


def test_the_processes_own_work_may_take_every_slot() -> None:
    async def run() -> list[str]:
        slots, order = _FairSlots(2), list[str]()
        release = asyncio.Event()
        own = [asyncio.create_task(_decode(slots, order, b"", f"own-{n}", release)) for n in (1, 2)]
        await asyncio.sleep(0.01)
        running = list(order)
        release.set()
        await asyncio.gather(*own)
        return running

    assert asyncio.run(run()) == ["own-1", "own-2"]
