"""WorkerStore: the embedded store in a child process, so a query past its deadline can be stopped.

pyoxigraph has no query timeout or cancel, and blocking operators (ORDER BY, GROUP BY, COUNT)
compute inside one native call. The only way to reclaim that CPU is to end the process
running it. So the server's store lives in a child process (one RocksDB opener, as the
store requires) serving calls from threads in two lanes: clients' queries (the calls with a
deadline) in one, the server's own calls in the other, so a lane full of slow queries never
holds up ingest bookkeeping or RAG lookups. On a deadline the parent kills the child and
starts a new one. Reads that were running beside the killed query are sent again to the
new process (unless past their own deadline); a kill waits until running writes have
finished, so a write's outcome is always known.

Some calls kill the process themselves (a stack overflow, out of memory). The call that did
is found (crash_report.py), fails once with QueryCrashed and is never sent again; its text is
refused from then on. Calls that had not started are sent to the new process; a write that
was running beside it fails with StoreUnavailable (it may or may not have applied).

The child and the wire between the two are store_process.py; this module is the parent's side.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
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
    StorageFull,
    StoreError,
    StoreUnavailable,
)
from sparqlrag.store.store_process import READ_METHODS, WRITE_METHODS, recv, send, slots

log = logging.getLogger("sparqlrag.store")
SPARQL_METHODS = frozenset({"query", "update"})
PIPED = READ_METHODS | WRITE_METHODS  # what the child answers (close is the parent's own)
P = ParamSpec("P")
T = TypeVar("T")
MAX_POISONED = 1024
RETRY_START = 5.0  # seconds between tries to start the store process again after one failed
MIN_FREE_BYTES = 32 << 20  # free space a write needs after the disk was found full (a new WAL and MANIFEST)
CRASHED = (
    "this operation stopped the store process (it nests or chains too deeply to evaluate, or needs more "
    "memory than the server has); it was not run again, and the same text is refused until the server restarts"
)


@dataclass
class _Call:
    method: str
    frame: tuple[Any, ...]  # (id, method, args, kwargs, lane)
    deadline: float | None = None  # monotonic time a client's query is stopped at
    future: Future[Any] = field(default_factory=Future)

    @property
    def is_write(self) -> bool:
        return self.method in WRITE_METHODS

    def fail(self, error: StoreError) -> None:
        """Fail the call, unless its caller has stopped waiting (a deadline cancels the future)."""
        if not self.future.done():
            self.future.set_exception(error)


@dataclass
class _Worker:
    process: subprocess.Popen[bytes]
    sock: socket.socket
    send_lock: threading.Lock = field(default_factory=threading.Lock)
    stopped: bool = False  # killed by us (a deadline), not by what it ran


def _poison_key(method: str, args: tuple[Any, ...]) -> bytes | None:
    if method not in SPARQL_METHODS or not args or not isinstance(args[0], str):
        return None
    return hashlib.sha256(f"{method}\0{args[0]}".encode()).digest()


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
        self._pending: dict[int, _Call] = {}
        self._writes_running = 0
        self._killing = False  # a kill is due: new writes wait for the next child
        self._closed = False
        self._failure: StoreError | None = None  # set when a restart failed: calls fail fast with it
        self._failed_at = 0.0  # when the last start failed: one more is tried RETRY_START later
        self._full = False  # a write found the disk full: the next write needs a fresh child
        self._restarting = False  # a new child is being started (outside the lock)
        self._poisoned: OrderedDict[bytes, None] = OrderedDict()  # texts that killed the store
        self._table_file = tempfile.TemporaryFile()
        self._table = crash_report.RunningTable(self._table_file, len(slots(threads)))
        self._dump_file = tempfile.TemporaryFile()
        self._worker: _Worker | None = None
        self._worker = self._start()

    # -- lifecycle ----------------------------------------------------------------------------

    def _start(self) -> _Worker:
        self._table.reset()
        self._dump_file.truncate(0)
        parent, child = socket.socketpair()
        fds = (child.fileno(), self._table_file.fileno(), self._dump_file.fileno())
        command = [
            sys.executable,
            "-c",
            "import sys; from sparqlrag.store.store_process import main; main(sys.argv[1:])",
            str(fds[0]),
            str(self.path),
            str(self.threads),
            "1" if self.allow_remote else "0",
            str(fds[1]),
            str(fds[2]),
        ]
        process = subprocess.Popen(command, pass_fds=fds)
        child.close()
        parent.settimeout(self.start_timeout)
        ready = recv(parent)
        parent.settimeout(None)
        if ready is None or not ready[1]:
            process.kill()
            process.wait()
            parent.close()
            if ready is not None and isinstance(ready[2], StoreError):
                raise ready[2]
            raise StoreUnavailable(f"the store process for {self.path} did not start")
        worker = _Worker(process, parent)
        threading.Thread(target=self._read_replies, args=(worker,), daemon=True, name="store-replies").start()
        return worker

    def _read_replies(self, worker: _Worker) -> None:
        while (message := recv(worker.sock)) is not None:
            request_id, ok, value = cast(tuple[int, bool, Any], message)
            with self._state:
                call = self._pending.pop(request_id, None)
                if call is not None and call.is_write:
                    self._writes_running -= 1
                    self._state.notify_all()
            if call is not None and not call.future.done():
                if ok:
                    call.future.set_result(value)
                else:
                    call.future.set_exception(value)
            if isinstance(value, StorageFull):
                with self._state:
                    self._full = True
        self._after_exit(worker)

    def _after_exit(self, worker: _Worker) -> None:
        """The child is gone (killed for a deadline, or crashed): blame the call that killed it,
        start another child, resend what is safe to resend."""
        returncode = worker.process.wait()
        worker.sock.close()
        with self._state:
            if self._closed or self._worker is not worker:
                return
            running = self._table.running()  # (under the lock: close() shuts these files after it marks _closed)
            dump = os.pread(self._dump_file.fileno(), 1 << 20, 0)
            self._worker = None
            self._killing = False
            orphans = dict(self._pending)
            self._pending.clear()
            self._writes_running = 0
            blamed = None if worker.stopped else crash_report.culprit(running, dump)
            if not worker.stopped:
                log.error(
                    "the store process died (exit status %s)%s; restarting it",
                    returncode,
                    f", killed by request {blamed}" if blamed in orphans else "",
                )
            if blamed in orphans:  # fail it now, before the restart: fast, and never sent again
                call = orphans.pop(blamed)
                if (key := _poison_key(call.method, call.frame[2])) is not None:
                    self._poisoned[key] = None
                    while len(self._poisoned) > MAX_POISONED:
                        self._poisoned.popitem(last=False)
                call.fail(QueryCrashed(CRASHED))
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
                for call in orphans.values():
                    call.fail(StoreUnavailable("the store is closed"))
                return
            if started_worker is None:
                log.error("the store process could not restart: %s", failure)
                self._failure = (
                    failure
                    if isinstance(failure, StorageFull)
                    else StoreUnavailable("the store process could not restart; see the server log")
                )
                self._failed_at = time.monotonic()
                for call in orphans.values():
                    call.fail(self._failure)
                return
            self._worker = started_worker
            self.restarts += 1
            self._resend(worker, orphans, running, blamed)

    def _resend(self, stopped: _Worker, orphans: dict[int, _Call], running: dict[Any, int], blamed: int | None) -> None:
        """Send the calls the stopped child left to the new one, where that is safe; fail the
        rest. The caller holds the lock."""
        assert self._worker is not None
        started, now = set(running.values()), time.monotonic()
        for request_id, call in orphans.items():
            if call.deadline is not None and call.deadline <= now:  # its caller stops waiting anyway
                call.fail(QueryTimeout("the query ran past its limit and was stopped"))
            elif request_id in started and call.is_write:
                call.fail(StoreUnavailable("the store process stopped while this write ran; check whether it applied"))
            elif request_id in started and not stopped.stopped and blamed is None:
                call.fail(
                    StoreUnavailable(
                        "the store process stopped while this ran beside other operations, one of which stopped it; "
                        "it was not run again: send it again if it is not the one"
                    )
                )
            else:  # not started, or running beside a known culprit or a deadline kill
                self._pending[request_id] = call
                if call.is_write:
                    self._writes_running += 1
                send(self._worker.sock, self._worker.send_lock, call.frame)

    def close(self) -> None:
        with self._state:
            self._closed = True
            self._state.wait_for(lambda: not self._restarting)  # (its files are in use meanwhile)
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.sock.shutdown(socket.SHUT_RDWR)  # the child sees EOF and exits; close() alone would
            worker.sock.close()  # not wake the reply thread blocked in recv()
            try:
                worker.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
        self._table_file.close()
        self._dump_file.close()

    # -- calls --------------------------------------------------------------------------------

    def _call_for(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], timeout: float | None) -> _Call:
        """The call to send. A call with a `timeout` (a client's query) runs in the child's client
        lane, the rest in its own, so the server's calls keep moving while clients' queries fill theirs."""
        if self._poisoned and _poison_key(method, args) in self._poisoned:  # unlocked: a restart may hold the lock
            refused = QueryCrashed(CRASHED)
            refused.stopped_store = False  # (refused now: it costs no restart)
            raise refused
        request_id = next(self._ids)
        lane, deadline = ("internal", None) if timeout is None else ("client", time.monotonic() + timeout)
        return _Call(method, (request_id, method, args, kwargs, lane), deadline)

    def _submit(self, call: _Call, wait: bool = True) -> bool:
        """Send a call to the child (its future resolves when its reply arrives), waiting while the
        child restarts; without `wait` (on the event loop), False instead of waiting."""
        with self._state:
            busy = self._worker is None or (call.is_write and (self._killing or self._full))
            if busy and not wait:
                return False
            if call.is_write and self._full:
                self._reopen_after_full()
            while (self._worker is None or (call.is_write and self._killing)) and not self._closed:
                if self._failure is not None:
                    self._start_again()
                    continue
                self._state.wait()  # the child is restarting; writes also wait while a kill is due
            if self._closed or self._worker is None:
                raise StoreUnavailable("the store is closed")
            self._pending[call.frame[0]] = call
            if call.is_write:
                self._writes_running += 1
            worker = self._worker
        try:
            send(worker.sock, worker.send_lock, call.frame)
        except OSError:
            pass  # the child just died: once restarted, _after_exit resends this call (or fails a write)
        return True

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

    def _timed_out(self, request_id: int, timeout: float) -> QueryTimeout:
        self._stop_overdue(request_id)
        return QueryTimeout(
            f"the query ran past its {timeout:g} s limit and was stopped; narrow it, add LIMIT, "
            "or raise the limit with the timeout parameter"
        )

    def _call(self, method: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        call = self._call_for(method, args, kwargs, timeout)
        self._submit(call)
        try:
            return call.future.result(timeout)
        except FutureTimeout:
            raise self._timed_out(call.frame[0], timeout or 0) from None

    async def awaited(self, method: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """`method(*args, **kwargs)`, one of this store's own methods, awaited on the event loop
        without tying up a thread: a call the child answers is sent down the pipe and its reply
        awaited; anything else (close) runs in a thread. Small calls are sent from the loop
        itself; large payloads, and calls made while the child restarts or is being stopped
        (which wait for it), are sent from a thread: the loop never waits for the child."""
        name = method.__name__
        if getattr(method, "__self__", None) is not self or name not in PIPED:
            return await asyncio.to_thread(method, *args, **kwargs)
        sent = dict(kwargs)
        timeout: float | None = sent.pop("timeout", None)  # type: ignore[assignment]
        call = self._call_for(name, args, sent, timeout)
        small = all(not isinstance(a, (str, bytes)) or len(a) < 65536 for a in args)
        if not (small and self._submit(call, wait=False)):
            await asyncio.to_thread(self._submit, call)
        try:
            return cast(T, await asyncio.wait_for(asyncio.wrap_future(call.future), timeout))
        except TimeoutError:
            raise await asyncio.to_thread(self._timed_out, call.frame[0], timeout or 0) from None

    def _stop_overdue(self, request_id: int) -> None:
        """Kill the child running an overdue read, once running writes have finished."""
        with self._state:
            call = self._pending.pop(request_id, None)
            if call is None:  # it finished (or its process died) meanwhile
                return
            self._killing = True
            while self._writes_running and self._worker is not None:
                self._state.wait()
            worker = self._worker
            if worker is not None:
                worker.stopped = True
        if worker is not None:
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
