"""WorkerStore: the embedded store in a child process, so a query past its deadline can be
stopped (supervisor.py keeps the process; store_process.py is the child and the wire).

A call takes an idle connection of its lane, sends itself and reads its reply there: on the
event loop the loop itself reads it (no thread, no hand-over), elsewhere the calling thread
does. A read may stream: its answer comes in pieces as the child writes it, read ahead only a
little, so neither process holds a big answer whole and a slow client holds the query back.
"""

from __future__ import annotations

import asyncio
import functools
import pickle
import socket
from collections import deque
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar, Unpack, cast

from pyoxigraph import RdfFormat

from sparqlrag.store.base import (
    Graph,
    QueryOptions,
    QueryResult,
    ResultStream,
    StoreUnavailable,
)
from sparqlrag.store.store_process import (
    HEADER,
    PIECE,
    READ_METHODS,
    STREAM,
    WRITE_METHODS,
    header_size,
    recv,
    send,
)
from sparqlrag.store.supervisor import Call, Child, StoreSupervisor

PIPED = READ_METHODS | WRITE_METHODS  # what the child answers (close is the parent's own)
P = ParamSpec("P")
T = TypeVar("T")
READ_SIZE = 1 << 20  # bytes of a reply taken at once
QUEUED = 4  # pieces of a streamed result read ahead of its client
MAX_LOOP_SEND = 65536  # text sent from the event loop itself; an idle connection's buffer takes more at once


class _Frames:
    """The messages of one call's reply, read on the event loop as they arrive (no task, no
    thread): pieces of a streamed result (id, PIECE, QueryResult), then the end (id, ok, value),
    or None once the child has gone. Reading pauses while QUEUED pieces wait, so a slow client
    holds the query back (the child waits to send) instead of filling memory. Once `drop`ped
    (nobody waits any more: a deadline, a cancellation, a client gone), what comes is discarded
    and the end goes to `abandoned`, so the connection is freed when the reply is whole."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, sock: socket.socket, abandoned: Callable[[tuple[Any, ...] | None], None]
    ) -> None:
        self.loop, self.sock, self.abandoned = loop, sock, abandoned
        self.buffer = bytearray()
        self.pieces: deque[tuple[Any, ...]] = deque()
        self.end: tuple[Any, ...] | None = None
        self.ended = self.dropped = False
        self.waiter: asyncio.Future[None] | None = None
        self.reading = True
        sock.setblocking(False)
        loop.add_reader(sock.fileno(), self._readable)

    def _readable(self) -> None:
        try:
            data = self.sock.recv(READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._finish(None)
            return
        self.buffer += data
        while (message := self._message()) is not None:
            if message[1] != PIECE:
                self._finish(message)
                return
            if not self.dropped:
                self.pieces.append(message)
        if len(self.pieces) >= QUEUED:
            self._pause()
        self._wake()

    def _message(self) -> tuple[Any, ...] | None:
        if len(self.buffer) < HEADER:
            return None
        size = header_size(bytes(self.buffer[:HEADER]))
        if len(self.buffer) < HEADER + size:
            return None
        message = cast(tuple[Any, ...], pickle.loads(memoryview(self.buffer)[HEADER : HEADER + size]))
        del self.buffer[: HEADER + size]
        return message

    def _pause(self) -> None:
        if self.reading:
            self.loop.remove_reader(self.sock.fileno())
            self.reading = False

    def _finish(self, end: tuple[Any, ...] | None) -> None:
        self._pause()
        self.ended, self.end = True, end
        if end is None:
            self.sock.close()  # its child has gone: nothing else uses it
        if self.dropped:
            self.abandoned(end)
        self._wake()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def next(self) -> tuple[Any, ...] | None:
        """The next piece, else the end (None: the child has gone)."""
        while not self.pieces and not self.ended:
            self.waiter = self.loop.create_future()
            await self.waiter
        if self.pieces:
            piece = self.pieces.popleft()
            if not self.reading and not self.ended and len(self.pieces) < QUEUED:
                self.reading = True
                self.loop.add_reader(self.sock.fileno(), self._readable)
            return piece
        return self.end

    def drop(self) -> None:
        if self.dropped:
            return
        self.dropped = True
        self.pieces.clear()
        if self.ended:
            self.abandoned(self.end)
        elif not self.reading:
            self.reading = True
            self.loop.add_reader(self.sock.fileno(), self._readable)


class WorkerStore(StoreSupervisor):
    """The QuadStore interface, executed by a restartable child process. Thread-safe."""

    cancels_on_hang_up = False  # (stopping a call means restarting the child: a client could do it at will)
    loads_readers = False

    def _run(self, call: Call) -> Any:
        """Send the call and wait for its reply on this thread (again on the next child if its
        child dies and that is safe); past its deadline the child is stopped (QueryTimeout)."""
        while True:
            acquired = self._acquire(call)
            assert acquired is not None
            worker, sock = acquired
            try:
                sock.settimeout(call.remaining())
                send(sock, call.frame)
                reply = recv(sock)
            except TimeoutError:
                timed_out = self._timed_out(worker, call)  # (its child is stopped: the socket is done with)
                sock.close()
                raise timed_out from None
            except OSError:
                reply = None  # the child died as this was sent
            if reply is not None:
                return self._answered(worker, sock, call, reply)
            sock.close()
            self._after_death(worker, call)

    def _call(self, method: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        return self._run(self._call_for(method, args, kwargs, timeout))

    async def awaited(self, method: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """`method(*args, **kwargs)`, one of this store's own methods, awaited on the event loop
        without tying up a thread: a call the child answers is sent on an idle connection and
        its reply read by the loop itself; anything else (close) runs in a thread. Large
        payloads, and calls that must wait for a connection or for the child to restart, are
        sent from a thread: the loop never waits for the child."""
        name = method.__name__
        if getattr(method, "__self__", None) is not self or name not in PIPED:
            return await asyncio.to_thread(method, *args, **kwargs)
        sent = dict(kwargs)
        timeout: float | None = sent.pop("timeout", None)  # type: ignore[assignment]
        call = self._call_for(name, args, sent, timeout)
        while True:
            worker, sock, frames = await self._sent(call)
            reply = None if frames is None else await self._next(frames, worker, call)
            if reply is not None:
                return cast(T, self._answered(worker, sock, call, reply))
            await asyncio.to_thread(self._after_death, worker, call)

    async def streamed_query(self, sparql: str, **options: Unpack[QueryOptions]) -> ResultStream:
        """`query`, its result handed on in pieces as the child writes it: never whole in memory
        on either side, and a slow client holds the query back. Until the first piece is in it
        raises as `query` does (and a child that dies first is dealt with as for any call);
        after, `rest` raises."""
        sent: dict[str, object] = {"of": "query", **options}
        timeout = cast(float | None, sent.pop("timeout"))
        return await self._stream(self._call_for(STREAM, (sparql,), sent, timeout), "")

    async def streamed_graph(self, graph: Graph, format: RdfFormat, media_type: str, timeout: float) -> ResultStream:
        """`serialize_graph` (404 for a graph that does not exist), in pieces as `stream` is: a
        client's read, within `timeout`, on the clients' connections."""
        call = self._call_for(STREAM, (graph, format), {"of": "serialize_graph"}, timeout)
        return await self._stream(call, media_type)

    async def _stream(self, call: Call, media_type: str) -> ResultStream:
        """The streamed call's answer: its head (a graph's with `media_type`), then the rest."""
        while True:
            worker, sock, frames = await self._sent(call)
            message = None if frames is None else await self._next(frames, worker, call)
            if message is None:
                await asyncio.to_thread(self._after_death, worker, call)
                continue
            if message[1] != PIECE:
                whole = self._answered(worker, sock, call, message)
                return ResultStream(
                    whole if isinstance(whole, QueryResult) else QueryResult("graph", media_type, whole)
                )
            assert frames is not None
            head = cast(QueryResult, message[2])
            return ResultStream(
                replace(head, media_type=head.media_type or media_type), self._rest(frames, worker, sock, call)
            )

    async def _rest(
        self, frames: _Frames, worker: Child, sock: socket.socket, call: Call
    ) -> AsyncGenerator[bytes, None]:
        """The pieces of a streamed result after the first; a consumer that stops early leaves
        the rest to be read and dropped (and the query stopped at its deadline)."""
        ended = False
        try:
            while (message := await self._next(frames, worker, call)) is not None and message[1] == PIECE:
                yield cast(QueryResult, message[2]).body
            ended = True
            if message is None:
                await asyncio.to_thread(self._after_death, worker, call)  # raises if it knows better
                raise StoreUnavailable(
                    "the store process restarted while this result was being sent; send the query again"
                )
            tail = self._answered(worker, sock, call, message)  # a query's QueryResult, a graph's bytes
            if body := tail.body if isinstance(tail, QueryResult) else tail:
                yield body
        finally:
            if not ended:
                frames.drop()
                self._stop_when_overdue(frames, worker, call)

    async def _sent(self, call: Call) -> tuple[Child, socket.socket, _Frames | None]:
        """Send the call on an idle connection (from the event loop when small: the connection's
        buffer takes it at once; else from a thread, as is waiting for a connection), and read
        its reply there; no reader when the child died as it was sent."""
        loop = asyncio.get_running_loop()
        small = all(not isinstance(a, (str, bytes)) or len(a) < MAX_LOOP_SEND for a in call.frame[2])
        acquired = (small and self._acquire(call, wait=False)) or await asyncio.to_thread(self._acquire, call)
        assert acquired
        worker, sock = acquired
        delivered = self._send(sock, call) if small else await asyncio.to_thread(self._send, sock, call)
        return (
            worker,
            sock,
            _Frames(loop, sock, functools.partial(self._settle, worker, sock, call)) if delivered else None,
        )

    @staticmethod
    def _send(sock: socket.socket, call: Call) -> bool:
        try:
            sock.settimeout(None)
            send(sock, call.frame)
        except OSError:
            sock.close()
            return False  # the child died as this was sent
        return True

    async def _next(self, frames: _Frames, worker: Child, call: Call) -> tuple[Any, ...] | None:
        """The call's next message; past its deadline the child is stopped (QueryTimeout). A
        caller cancelled meanwhile leaves the reply to be read and dropped."""
        try:
            async with asyncio.timeout(call.remaining()):
                return await frames.next()
        except TimeoutError:
            frames.drop()
            raise await asyncio.to_thread(self._timed_out, worker, call) from None
        except asyncio.CancelledError:
            frames.drop()
            self._stop_when_overdue(frames, worker, call)
            raise

    def _stop_when_overdue(self, frames: _Frames, worker: Child, call: Call) -> None:
        """A dropped call still runs in the child: stop it at its deadline unless it ended."""
        remaining = call.remaining()
        if remaining is None:
            return

        def check() -> None:
            if not frames.ended:
                frames.loop.run_in_executor(None, self._stop_overdue, worker, call)

        frames.loop.call_later(remaining, check)

    def healthy(self) -> bool:
        """Open, and its process up or being restarted (no round trip, and no lock: a restart
        holds it while the new process starts)."""
        return not self._closed and self._failure is None

    def query(
        self,
        sparql: str,
        *,
        accept: str | None = None,
        base_iri: str | None = None,
        default_graphs: Sequence[Graph] | None = None,
        named_graphs: Sequence[str] | None = None,
        union_default_graph: bool = False,
        timeout: float | None = None,
        max_bytes: int | None = None,
    ) -> QueryResult:
        """EmbeddedStore.query in the child; past `timeout` the child is killed (QueryTimeout)."""
        dataset = {"default_graphs": default_graphs, "named_graphs": named_graphs}
        return cast(
            QueryResult,
            self._call(
                "query",
                sparql,
                timeout=timeout,
                accept=accept,
                base_iri=base_iri,
                union_default_graph=union_default_graph,
                max_bytes=max_bytes,
                **dataset,
            ),
        )

    def update(
        self,
        sparql: str,
        *,
        base_iri: str | None = None,
        using_graphs: list[str] | None = None,
        using_named_graphs: Sequence[str] | None = None,
    ) -> None:
        self._call(
            "update", sparql, base_iri=base_iri, using_graphs=using_graphs, using_named_graphs=using_named_graphs
        )

    def graph_exists(self, graph: str | None) -> bool:
        return cast(bool, self._call("graph_exists", graph))

    def named_graphs(self) -> list[str]:
        return cast(list[str], self._call("named_graphs"))

    def serialize_graph(self, graph: str | None, format: RdfFormat, prefixes: dict[str, str] | None = None) -> bytes:
        return cast(bytes, self._call("serialize_graph", graph, format, prefixes))

    def replace_graph(
        self, graph: str | None, source: Path, format: RdfFormat, base_iri: str | None, bulk: bool = False
    ) -> bool:
        return cast(bool, self._call("replace_graph", graph, source, format, base_iri, bulk))

    def add_to_graph(self, graph: str | None, source: Path, format: RdfFormat, base_iri: str | None) -> bool:
        return cast(bool, self._call("add_to_graph", graph, source, format, base_iri))

    def add_quads(self, nquads: bytes) -> None:
        self._call("add_quads", nquads)

    def drop_graph(self, graph: str | None) -> None:
        self._call("drop_graph", graph)

    def dump(self, target: Path, format: RdfFormat, graph: Graph | Literal["all"] = "all") -> None:
        self._call("dump", target, format, graph)

    def load(
        self,
        source: Path,
        format: RdfFormat,
        *,
        graph: Graph = None,
        base_iri: str | None = None,
        replace: bool = False,
        bulk: bool = False,
        checked: bool = True,
    ) -> None:
        self._call("load", source, format, graph=graph, base_iri=base_iri, replace=replace, bulk=bulk, checked=checked)

    def count(self) -> int:
        return cast(int, self._call("count"))

    def optimize(self) -> None:
        self._call("optimize")
