"""A store's answer written in a thread, handed to the event loop in pieces as the thread emits
them (how the remote store streams what its server sends)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Callable

from sparqlrag.store.base import ClientGone, QueryResult, ResultStream
from sparqlrag.store.worker import QUEUED


async def streamed_from_thread(answer: Callable[..., QueryResult]) -> ResultStream:
    """`answer(emit=...)` run in a thread, the pieces it emits handed to the event loop as they
    come; at most QUEUED wait, so the thread (and the remote store's answer) waits for a slow
    client, and a client that stops reading ends it at its next piece."""
    loop = asyncio.get_running_loop()
    pieces: asyncio.Queue[QueryResult] = asyncio.Queue(QUEUED)
    gone = threading.Event()

    def emit(piece: QueryResult) -> None:
        if gone.is_set():
            raise ClientGone("the reader of this answer has gone")
        asyncio.run_coroutine_threadsafe(pieces.put(piece), loop).result()

    work = asyncio.ensure_future(asyncio.to_thread(answer, emit=emit))
    try:
        first = await _next_piece(pieces, work)
    except BaseException:
        _abandon(pieces, work, gone)
        raise
    if first is None:
        return ResultStream(await work)
    return ResultStream(first, _rest(pieces, work, gone))


async def _next_piece(pieces: asyncio.Queue[QueryResult], work: asyncio.Future[QueryResult]) -> QueryResult | None:
    """The next piece, or None once `work` has ended with none left."""
    if pieces.empty() and not work.done():
        getting = asyncio.ensure_future(pieces.get())
        try:
            await asyncio.wait({getting, work}, return_when=asyncio.FIRST_COMPLETED)
            if getting.done():
                return getting.result()
        finally:
            getting.cancel()  # (done already, or never to be taken)
    return None if pieces.empty() else pieces.get_nowait()


async def _rest(
    pieces: asyncio.Queue[QueryResult], work: asyncio.Future[QueryResult], gone: threading.Event
) -> AsyncGenerator[bytes, None]:
    try:
        while (piece := await _next_piece(pieces, work)) is not None:
            yield piece.body
        tail = await work  # raises if the answer could not be finished
        if tail.body:
            yield tail.body
    finally:
        _abandon(pieces, work, gone)


def _abandon(pieces: asyncio.Queue[QueryResult], work: asyncio.Future[QueryResult], gone: threading.Event) -> None:
    """Nobody reads on (the client stopped, or went before the first piece): the thread's next
    piece ends its work, and a piece it waits to put goes in, so it never waits for ever."""
    if work.done():
        return
    gone.set()
    while not pieces.empty():
        pieces.get_nowait()
    work.add_done_callback(lambda ended: ended.cancelled() or ended.exception())
