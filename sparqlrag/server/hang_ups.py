"""A client that hangs up stops the store calls and the decodes made for it.

A remote store's request (store/deadlines.py) is cut off at once when its client has gone, so
a long query of a client that gave up does not go on holding the store and a connection. The
embedded store's calls run on to their deadline: stopping one means restarting the store
process, which a client could otherwise make happen at will by hanging up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from starlette.requests import Request

from sparqlrag.operations import documents
from sparqlrag.store.base import QuadStore
from sparqlrag.store.deadlines import CANCEL, Cancel


@contextlib.asynccontextmanager
async def ended_by_hang_up(request: Request, store: QuadStore) -> AsyncIterator[None]:
    """Calls made in the block to a store that says it can (`cancels_on_hang_up`: a remote one;
    their threads carry CANCEL) stop when the client hangs up; for any other the block just
    runs. The block may end in another task than it began in (a streamed answer's), so CANCEL
    is set back, not reset by token."""
    if not store.cancels_on_hang_up:
        yield
        return
    cancel, before = Cancel(), CANCEL.get()
    CANCEL.set(cancel)
    watcher = asyncio.create_task(_hang_up(request, cancel))
    try:
        yield
    finally:
        watcher.cancel()
        CANCEL.set(before)


@contextlib.asynccontextmanager
async def decoding_for(request: Request, client: bytes) -> AsyncIterator[None]:
    """Documents decoded in the block are this client's (operations/documents.py) and are
    stopped when the client hangs up (its body was read before)."""
    with documents.decoding_for(client) as gone:
        watcher = asyncio.create_task(_hang_up(request, gone))
        try:
            yield
        finally:
            watcher.cancel()


async def _hang_up(request: Request, cancel: Cancel | asyncio.Event) -> None:
    """Set `cancel` once the client has gone (its body, if any, was read before)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    cancel.set()
