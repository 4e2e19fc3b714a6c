"""The one way code on the event loop runs blocking work: `await off_loop(fn, *args)`.

Store calls, store helpers (a SELECT through `select`), index and model calls all block. A
method of the worker-process store is awaited on the worker's reply, so no thread waits while
the child evaluates (a slow query does not take one of the few pool threads); everything else
runs in the default thread pool.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import AsyncGenerator, Callable
from typing import ParamSpec, TypeVar, Unpack

from pyoxigraph import RdfFormat

from sparqlrag.store.base import ClientGone, Graph, QuadStore, QueryOptions, QueryResult, ResultStream
from sparqlrag.store.remote import RemoteStore
from sparqlrag.store.worker import QUEUED, WorkerStore

P = ParamSpec("P")
T = TypeVar("T")


async def streamed_query(store: QuadStore, sparql: str, **options: Unpack[QueryOptions]) -> ResultStream:
    """A client's query: from a worker store its result streams as it is written, from a remote
    store as the store sends it (never whole in memory); the embedded store answers it whole."""
    if isinstance(store, WorkerStore):
        return await store.stream(sparql, **options)
    if isinstance(store, RemoteStore):
        return await _streamed_from_thread(functools.partial(store.query, sparql, **options))
    return ResultStream(await off_loop(store.query, sparql, **options))


async def _streamed_from_thread(answer: Callable[..., QueryResult]) -> ResultStream:
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


async def streamed_graph(
    store: QuadStore, graph: Graph, format: RdfFormat, media_type: str, timeout: float
) -> ResultStream:
    """A client's read of a graph in `format` (its media type `media_type`), within `timeout`:
    from a worker store it streams as it is written, on the clients' connections; any other
    store answers it whole."""
    if isinstance(store, WorkerStore):
        return await store.stream_graph(graph, format, media_type, timeout)
    return ResultStream(QueryResult("graph", media_type, await off_loop(store.serialize_graph, graph, format)))


async def off_loop(call: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`call(*args, **kwargs)`, awaited without blocking the event loop."""
    store = getattr(call, "__self__", None)
    if isinstance(store, WorkerStore):
        return await store.awaited(call, *args, **kwargs)
    return await asyncio.to_thread(call, *args, **kwargs)
