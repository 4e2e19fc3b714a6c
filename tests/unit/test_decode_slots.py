"""The decode pool's workers go round fairly: when all are busy, the next free one goes to the
waiting client that holds the fewest, not to whoever queued first."""

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
