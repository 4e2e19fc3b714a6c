"""WorkerStore: the embedded store in a child process, so a query past its deadline can be stopped.

pyoxigraph has no query timeout or cancel, and blocking operators (ORDER BY, GROUP BY, COUNT)
compute inside one native call. The only way to reclaim that CPU is to end the process
running it. So the server's store lives in a child process (one RocksDB opener, as the
store requires) with one thread per connection to the parent, the connections in two lanes:
clients' queries (the calls with a deadline) in one, the server's own calls in the other, so a
lane full of slow queries never holds up ingest bookkeeping or RAG lookups. A call takes an
idle connection of its lane, sends itself and reads its reply there: on the event loop the
loop itself reads it (no thread, no hand-over), elsewhere the calling thread does. A query
that cannot get a connection before its deadline fails without running. On a deadline the
parent kills the child and starts a new one. Reads that were running beside the killed query
are sent again to the new process (unless past their own deadline); a kill waits until
running writes have finished, so a write's outcome is always known.

Some calls kill the process themselves (a stack overflow, out of memory). The call that did
is found (crash_report.py), fails once with QueryCrashed and is never sent again; its text is
refused from then on. Calls that had not started are sent to the new process; a write that
was running beside it fails with StoreUnavailable (it may or may not have applied).

The child and the wire between the two are store_process.py; this module is the parent's side.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import logging
import os
import pickle
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict, deque
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar, cast

from pyoxigraph import RdfFormat

from sparqlrag.store import crash_report
from sparqlrag.store.base import (
    DISK_FULL,
    Graph,
    QueryCrashed,
    QueryResult,
    QueryTimeout,
    ResultStream,
    StorageFull,
    StoreError,
    StoreUnavailable,
)
from sparqlrag.store.store_process import (
    HEADER,
    LANES,
    PIECE,
    READ_METHODS,
    STREAM,
    WRITE_METHODS,
    header_size,
    recv,
    send,
    slots,
)

log = logging.getLogger("sparqlrag.store")
SPARQL_METHODS = frozenset({"query", "update"})
PIPED = READ_METHODS | WRITE_METHODS  # what the child answers (close is the parent's own)
P = ParamSpec("P")
T = TypeVar("T")
MAX_POISONED = 1024
READ_SIZE = 1 << 20  # bytes of a reply taken at once
QUEUED = 4  # pieces of a streamed result read ahead of its client
MAX_LOOP_SEND = 65536  # text sent from the event loop itself; an idle connection's buffer takes more at once
RETRY_START = 5.0  # seconds between tries to start the store process again after one failed
MIN_FREE_BYTES = 32 << 20  # free space a write needs after the disk was found full (a new WAL and MANIFEST)
CRASHED = (
    "this operation stopped the store process (it nests or chains too deeply to evaluate, or needs more "
    "memory than the server has); it was not run again, and the same text is refused until the server restarts"
)


@dataclass
class _Call:
    method: str
    frame: tuple[Any, ...]  # (id, method, args, kwargs)
    lane: str  # the connections it is sent on (LANES)
    limit: float | None = None  # a client's query's time limit, in seconds
    deadline: float | None = None  # monotonic time it is stopped at

    @property
    def id(self) -> int:
        request_id: int = self.frame[0]
        return request_id

    @property
    def is_write(self) -> bool:
        return self.method in WRITE_METHODS

    def remaining(self) -> float | None:
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0.0)


@dataclass
class _Death:
    """What a child left when it exited: the calls it had begun, the one that killed it (if
    known), and whether the parent stopped it (a deadline) rather than what it ran."""

    started: set[int]
    blamed: int | None
    stopped: bool


@dataclass
class _Worker:
    process: subprocess.Popen[bytes]
    control: socket.socket  # EOF here: the child has exited
    idle: dict[str, list[socket.socket]]  # per lane, the connections (one per serving thread of the child) no call uses
    writes: int = 0  # writes sent and not answered: a kill waits for them
    stopped: bool = False  # killed by us (a deadline), not by what it ran
    death: _Death | None = None


def _poison_key(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes | None:
    """What a text that killed the store is refused by: a query's the same streamed or not."""
    name = kwargs.get("of") if method == STREAM else method
    if name not in SPARQL_METHODS or not args or not isinstance(args[0], str):
        return None
    return hashlib.sha256(f"{name}\0{args[0]}".encode()).digest()


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


class WorkerStore:
    """The QuadStore interface, executed by a restartable child process. Thread-safe."""

    def __init__(
        self, path: Path, *, threads: int = 8, allow_remote: bool = False, start_timeout: float = 120.0
    ) -> None:
        self.path = path
        self.threads = threads
        self.allow_remote = allow_remote
        self.start_timeout = start_timeout
        self.restarts = 0
        self._ids = itertools.count()
        self._state = threading.Condition()  # guards everything below
        self._pending: dict[int, _Call] = {}  # sent and not answered
        self._killing = False  # a kill is due: new writes wait for the next child
        self._closed = False
        self._failure: StoreError | None = None  # set when a restart failed: calls fail fast with it
        self._failed_at = 0.0  # when the last start failed: one more is tried RETRY_START later
        self._full = False  # a write found the disk full: the next write needs a fresh child
        self._restarting = False  # a new child is being started (outside the lock)
        self._poisoned: OrderedDict[bytes, None] = OrderedDict()  # texts that killed the store
        self._lanes = slots(threads)
        self._table_file = tempfile.TemporaryFile()
        self._table = crash_report.RunningTable(self._table_file, len(self._lanes))
        self._dump_file = tempfile.TemporaryFile()
        self._worker: _Worker | None = None
        self._worker = self._start()

    # -- lifecycle ----------------------------------------------------------------------------

    def _start(self) -> _Worker:
        self._table.reset()
        self._dump_file.truncate(0)
        control, child_control = socket.socketpair()
        pairs = [socket.socketpair() for _ in self._lanes]
        fds = [child_control.fileno(), self._table_file.fileno(), self._dump_file.fileno()]
        connection_fds = [theirs.fileno() for _, theirs in pairs]
        command = [
            sys.executable,
            "-c",
            "import sys; from sparqlrag.store.store_process import main; main(sys.argv[1:])",
            str(fds[0]),
            str(self.path),
            "1" if self.allow_remote else "0",
            str(fds[1]),
            str(fds[2]),
            *map(str, connection_fds),
        ]
        process = subprocess.Popen(command, pass_fds=fds + connection_fds)
        child_control.close()
        for _, theirs in pairs:
            theirs.close()
        ours = [mine for mine, _ in pairs]
        control.settimeout(self.start_timeout)
        try:
            ready = recv(control)
        except TimeoutError:
            ready = None
        control.settimeout(None)
        if ready is None or not ready[1]:
            process.kill()
            process.wait()
            for sock in [control, *ours]:
                sock.close()
            if ready is not None and isinstance(ready[2], StoreError):
                raise ready[2]
            raise StoreUnavailable(f"the store process for {self.path} did not start")
        idle: dict[str, list[socket.socket]] = {lane: [] for lane in LANES}
        for lane, sock in zip(self._lanes, ours, strict=True):
            idle[lane].append(sock)
        worker = _Worker(process, control, idle)
        threading.Thread(target=self._watch, args=(worker,), daemon=True, name="store-watch").start()
        return worker

    def _watch(self, worker: _Worker) -> None:
        recv(worker.control)  # returns when the child has exited (its end closed)
        self._after_exit(worker)

    def _after_exit(self, worker: _Worker) -> None:
        """The child is gone (killed for a deadline, or crashed): record what it left for the
        calls it had (each decides in `_after_death`), and start another child."""
        returncode = worker.process.wait()
        with self._state:
            running = self._table.running() if not self._closed else {}  # (close() shuts the files after _closed)
            dump = os.pread(self._dump_file.fileno(), 1 << 20, 0) if not self._closed else b""
            blamed = None if worker.stopped or self._closed else crash_report.culprit(running, dump)
            worker.death = _Death(set(running.values()), blamed, worker.stopped)
            self._state.notify_all()
            self._close_idle(worker)
            if self._closed or self._worker is not worker:
                return
            if not worker.stopped:
                log.error(
                    "the store process died (exit status %s)%s; restarting it",
                    returncode,
                    f", killed by request {blamed}" if blamed in self._pending else "",
                )
            self._worker = None
            self._killing = False
            self._restarting = True
        try:  # not under the lock: a start takes about a second, and calls on the event loop take the lock
            started_worker: _Worker | None = self._start()
            failure = None
        except StoreError as error:
            started_worker, failure = None, error
        with self._state:
            self._restarting = False
            self._state.notify_all()
            if self._closed:  # closed meanwhile: nothing to serve
                if started_worker is not None:
                    started_worker.process.kill()
                return
            if started_worker is None:
                log.error("the store process could not restart: %s", failure)
                self._failure = (
                    failure
                    if isinstance(failure, StorageFull)
                    else StoreUnavailable("the store process could not restart; see the server log")
                )
                self._failed_at = time.monotonic()
                return
            self._worker = started_worker
            self.restarts += 1

    @staticmethod
    def _close_idle(worker: _Worker) -> None:
        """Close a dead child's sockets no call is using; each in use is closed by its caller,
        once it has seen the child gone (a socket the event loop watches must not be closed
        under it). The caller holds the lock."""
        worker.control.close()
        for lane in worker.idle.values():
            for sock in lane:
                sock.close()
            lane.clear()

    def close(self) -> None:
        with self._state:
            self._closed = True
            self._state.wait_for(lambda: not self._restarting)  # (its files are in use meanwhile)
            worker, self._worker = self._worker, None
            self._state.notify_all()
        if worker is not None:
            worker.control.shutdown(socket.SHUT_RDWR)  # the child sees EOF and exits
            try:
                worker.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
            with self._state:  # its watcher records the death: callers waiting on it are told the store closed
                self._state.wait_for(lambda: worker.death is not None, timeout=30)
        self._table_file.close()
        self._dump_file.close()

    # -- calls --------------------------------------------------------------------------------

    def _call_for(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], timeout: float | None) -> _Call:
        """The call to send. A call with a `timeout` (a client's query) goes on the clients'
        connections, the rest on the server's own, so the server's calls keep moving while
        clients' queries fill theirs."""
        if (
            self._poisoned and _poison_key(method, args, kwargs) in self._poisoned
        ):  # unlocked: a restart may hold the lock
            refused = QueryCrashed(CRASHED)
            refused.stopped_store = False  # (refused now: it costs no restart)
            raise refused
        request_id = next(self._ids)
        lane, deadline = ("internal", None) if timeout is None else ("client", time.monotonic() + timeout)
        return _Call(method, (request_id, method, args, kwargs), lane, timeout, deadline)

    def _acquire(self, call: _Call, wait: bool = True) -> tuple[_Worker, socket.socket] | None:
        """A connection of the call's lane on the running child, the call counted as sent;
        waits while the child restarts (writes also while a kill is due) and while the lane's
        connections are all busy. Without `wait` (on the event loop), None instead of waiting.
        A client's query that cannot start before its deadline ends with QueryTimeout."""
        with self._state:
            if call.is_write and self._full:
                self._reopen_after_full()
            while True:
                if self._closed:
                    raise StoreUnavailable("the store is closed")
                worker = self._worker
                ready = worker is not None and not (call.is_write and self._killing)
                if worker is not None and ready and worker.idle[call.lane]:
                    sock = worker.idle[call.lane].pop()
                    self._pending[call.id] = call
                    worker.writes += call.is_write
                    return worker, sock
                if not wait:
                    return None
                if worker is None and self._failure is not None:
                    self._start_again()
                    continue
                remaining = call.remaining()
                if remaining == 0.0:
                    raise QueryTimeout("the query waited past its limit for the store and was not run")
                self._state.wait(remaining)

    def _release(self, worker: _Worker, sock: socket.socket, call: _Call) -> None:
        """The call was answered: its connection serves the next call."""
        with self._state:
            self._pending.pop(call.id, None)
            worker.writes -= call.is_write
            if worker.death is None:
                worker.idle[call.lane].append(sock)
            else:
                sock.close()
            self._state.notify_all()

    def _answered(self, worker: _Worker, sock: socket.socket, call: _Call, reply: tuple[Any, ...]) -> Any:
        self._release(worker, sock, call)
        _, ok, value = reply
        if ok:
            return value
        if isinstance(value, StorageFull):
            with self._state:
                self._full = True
        raise value

    def _after_death(self, worker: _Worker, call: _Call) -> None:
        """The child died with `call` sent: raise what the caller is told, or return to send it
        again (on the next child), where that is safe."""
        with self._state:
            self._pending.pop(call.id, None)
            self._state.wait_for(lambda: worker.death is not None)
            death = cast(_Death, worker.death)
            if self._closed:
                raise StoreUnavailable("the store is closed")
            started = call.id in death.started
            if death.blamed == call.id:  # fail it now, before the restart: fast, and never sent again
                if (key := _poison_key(call.method, call.frame[2], call.frame[3])) is not None:
                    self._poisoned[key] = None
                    while len(self._poisoned) > MAX_POISONED:
                        self._poisoned.popitem(last=False)
                raise QueryCrashed(CRASHED)
            if call.deadline is not None and call.deadline <= time.monotonic():
                raise QueryTimeout("the query ran past its limit and was stopped")
            if started and call.is_write:
                raise StoreUnavailable("the store process stopped while this write ran; check whether it applied")
            if started and not death.stopped and death.blamed is None:
                raise StoreUnavailable(
                    "the store process stopped while this ran beside other operations, one of which stopped it; "
                    "it was not run again: send it again if it is not the one"
                )
            # not started, or running beside a known culprit or a deadline kill: sent again

    def _run(self, call: _Call) -> Any:
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

    def _reopen_after_full(self) -> None:
        """RocksDB refuses every write after one failed for want of space, until it is opened
        again; reads go on. So a write after that fails at once while the disk has less than
        MIN_FREE_BYTES free, and otherwise stops the child: _after_exit starts another, which
        this write waits for. The caller holds the lock."""
        if shutil.disk_usage(self.path).free < MIN_FREE_BYTES:
            raise StorageFull(DISK_FULL)
        worker, self._full = self._worker, False
        if worker is not None and not worker.stopped:
            log.warning("space was freed on the store's disk; restarting the store process")
            worker.stopped, self._killing = True, True
            worker.process.kill()

    def _start_again(self) -> None:
        """After a failed restart (a full disk, say), try once more every RETRY_START seconds;
        calls meanwhile fail fast. The caller holds the lock."""
        assert self._failure is not None
        if time.monotonic() - self._failed_at < RETRY_START:
            raise self._failure
        try:
            self._worker = self._start()
        except StoreError as error:
            log.error("the store process still cannot start: %s", error)
            self._failed_at = time.monotonic()
            if isinstance(error, StorageFull):
                self._failure = error
            raise self._failure from None
        self._failure = None
        self.restarts += 1
        self._state.notify_all()

    def _timed_out(self, worker: _Worker, call: _Call) -> QueryTimeout:
        self._stop_overdue(worker, call)
        return QueryTimeout(
            f"the query ran past its {call.limit or 0:g} s limit and was stopped; narrow it, add LIMIT, "
            "or raise the limit with the timeout parameter"
        )

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

    async def stream(
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
    ) -> ResultStream:
        """`query`, its result handed on in pieces as the child writes it: never whole in memory
        on either side, and a slow client holds the query back. Until the first piece is in it
        raises as `query` does (and a child that dies first is dealt with as for any call);
        after, `rest` raises."""
        options: dict[str, object] = {"of": "query", "accept": accept, "base_iri": base_iri}
        options |= {"default_graphs": default_graphs, "named_graphs": named_graphs}
        options |= {"union_default_graph": union_default_graph, "max_bytes": max_bytes}
        return await self._stream(self._call_for(STREAM, (sparql,), options, timeout), "")

    async def stream_graph(self, graph: Graph, format: RdfFormat, media_type: str) -> ResultStream:
        """`serialize_graph` (404 for a graph that does not exist), in pieces as `stream` is."""
        return await self._stream(self._call_for(STREAM, (graph, format), {"of": "serialize_graph"}, None), media_type)

    async def _stream(self, call: _Call, media_type: str) -> ResultStream:
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
        self, frames: _Frames, worker: _Worker, sock: socket.socket, call: _Call
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

    async def _sent(self, call: _Call) -> tuple[_Worker, socket.socket, _Frames | None]:
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
    def _send(sock: socket.socket, call: _Call) -> bool:
        try:
            sock.settimeout(None)
            send(sock, call.frame)
        except OSError:
            sock.close()
            return False  # the child died as this was sent
        return True

    async def _next(self, frames: _Frames, worker: _Worker, call: _Call) -> tuple[Any, ...] | None:
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

    def _stop_when_overdue(self, frames: _Frames, worker: _Worker, call: _Call) -> None:
        """A dropped call still runs in the child: stop it at its deadline unless it ended."""
        remaining = call.remaining()
        if remaining is None:
            return

        def check() -> None:
            if not frames.ended:
                frames.loop.run_in_executor(None, self._stop_overdue, worker, call)

        frames.loop.call_later(remaining, check)

    def _settle(self, worker: _Worker, sock: socket.socket, call: _Call, reply: tuple[Any, ...] | None) -> None:
        """A reply nobody waits for any more has come (or its child died): free its connection."""
        if reply is not None:
            self._release(worker, sock, call)
        else:
            with self._state:
                self._pending.pop(call.id, None)

    def _stop_overdue(self, worker: _Worker, call: _Call) -> None:
        """Kill the child running an overdue call, once running writes have finished."""
        with self._state:
            if self._pending.pop(call.id, None) is None or worker.death is not None:
                return  # it finished, or its process died, meanwhile
            self._killing = True
            while worker.writes and worker.death is None:
                self._state.wait()
            if worker.death is not None:
                return
            worker.stopped = True
        worker.process.kill()

    # -- the QuadStore interface --------------------------------------------------------------

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

    def replace_graph(self, graph: str | None, source: Path, format: RdfFormat, base_iri: str | None) -> bool:
        return cast(bool, self._call("replace_graph", graph, source, format, base_iri))

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
