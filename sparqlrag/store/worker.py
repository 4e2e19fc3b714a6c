"""WorkerStore: the embedded store in a child process, so a query past its deadline can be stopped.

pyoxigraph has no query timeout or cancel, and blocking operators (ORDER BY, GROUP BY, COUNT)
compute inside one native call. The only way to reclaim that CPU is to end the process
running it. So the server's store lives in a child process (one RocksDB opener, as the
store requires) serving calls from a thread pool; on a deadline the parent kills it and
starts a new one. Reads that were running beside the killed query are sent again to the
new process; a kill waits until running writes have finished, so a write's outcome is
always known.

Wire format: length-prefixed pickles over a socketpair. Requests are
(id, method, args, kwargs), replies (id, ok, value-or-exception).
"""

from __future__ import annotations

import asyncio
import copyreg
import itertools
import os
import pickle
import socket
import struct
import subprocess
import sys
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyoxigraph import RdfFormat

from sparqlrag.store.base import QueryTimeout, StoreError, StoreInternalError, StoreUnavailable

_FRAME = struct.Struct(">Q")
_RDF_FORMATS = {fmt.name: fmt for fmt in (getattr(RdfFormat, n) for n in dir(RdfFormat) if n.isupper())}


def _rdf_format(name: str) -> RdfFormat:
    return _RDF_FORMATS[name]


copyreg.pickle(RdfFormat, lambda fmt: (_rdf_format, (fmt.name,)))

READ_METHODS = frozenset({"query", "graph_exists", "named_graphs", "serialize_graph", "count", "dump"})
WRITE_METHODS = frozenset({"update", "replace_graph", "add_to_graph", "add_quads", "drop_graph", "load", "optimize"})


def _send(sock: socket.socket, lock: threading.Lock, message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    with lock:
        sock.sendall(_FRAME.pack(len(data)) + data)


def _recv_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket) -> Any:
    """The next message, or None when the other side has gone."""
    try:
        header = _recv_exactly(sock, _FRAME.size)
        if header is None:
            return None
        payload = _recv_exactly(sock, _FRAME.unpack(header)[0])
    except OSError:
        return None
    return None if payload is None else pickle.loads(payload)


# -- child side -------------------------------------------------------------------------------


def _serve(fd: int, path: Path, threads: int, allow_remote: bool) -> None:
    from sparqlrag.store.embedded import EmbeddedStore

    sock = socket.socket(fileno=fd)
    lock = threading.Lock()
    try:
        store = EmbeddedStore(path, allow_remote=allow_remote)
    except StoreError as error:
        _send(sock, lock, ("ready", False, error))
        return
    _send(sock, lock, ("ready", True, None))

    def run(request_id: int, method: str, args: tuple, kwargs: dict) -> None:
        try:
            if method not in READ_METHODS | WRITE_METHODS:
                raise StoreInternalError(f"unknown store method {method!r}")
            reply = (request_id, True, getattr(store, method)(*args, **kwargs))
        except StoreError as error:
            reply = (request_id, False, error)
        except Exception as error:  # a bug: report it rather than leave the caller waiting
            reply = (request_id, False, StoreInternalError(f"{type(error).__name__}: {error}"))
        try:
            _send(sock, lock, reply)
        except OSError:
            pass  # the parent went away; nothing to report to

    receive_lock = threading.Lock()

    def serve_calls() -> None:
        """Leader/follower: read one request, let the next idle thread read the next, run it."""
        while True:
            with receive_lock:
                message = _recv(sock)
            if message is None:
                store.close()
                os._exit(0)  # the parent is gone: do not wait for running queries
            run(*message)

    workers = [threading.Thread(target=serve_calls, name=f"store-{n}") for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


# -- parent side ------------------------------------------------------------------------------


@dataclass
class _Call:
    method: str
    frame: tuple
    future: Future = field(default_factory=Future)

    @property
    def is_write(self) -> bool:
        return self.method in WRITE_METHODS


@dataclass
class _Worker:
    process: subprocess.Popen
    sock: socket.socket
    send_lock: threading.Lock = field(default_factory=threading.Lock)


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
        self._failure: StoreUnavailable | None = None  # set when a restart failed: calls fail fast
        self._worker: _Worker | None = None
        self._worker = self._start()

    # -- lifecycle ----------------------------------------------------------------------------

    def _start(self) -> _Worker:
        parent, child = socket.socketpair()
        command = [
            sys.executable, "-c", "import sys; from sparqlrag.store.worker import main; main(sys.argv[1:])",
            str(child.fileno()), str(self.path), str(self.threads), "1" if self.allow_remote else "0",
        ]  # fmt: skip
        process = subprocess.Popen(command, pass_fds=(child.fileno(),))
        child.close()
        parent.settimeout(self.start_timeout)
        ready = _recv(parent)
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
        while (message := _recv(worker.sock)) is not None:
            request_id, ok, value = message
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
        self._after_exit(worker)

    def _after_exit(self, worker: _Worker) -> None:
        """The child is gone (killed for a deadline, or crashed): start another, resend reads."""
        worker.process.wait()
        worker.sock.close()
        with self._state:
            if self._closed or self._worker is not worker:
                return
            self._worker = None
            self._killing = False
            orphans = list(self._pending.items())
            self._pending.clear()
            self._writes_running = 0
            try:
                self._worker = self._start()
                self.restarts += 1
            except StoreError as error:
                self._failure = StoreUnavailable(f"the store process could not restart: {error}")
                for _, call in orphans:
                    call.future.set_exception(self._failure)
                self._state.notify_all()
                return
            for request_id, call in orphans:
                if call.is_write:
                    call.future.set_exception(
                        StoreUnavailable("the store process stopped while this write ran; check whether it applied")
                    )
                else:
                    self._pending[request_id] = call
                    _send(self._worker.sock, self._worker.send_lock, call.frame)
            self._state.notify_all()

    def close(self) -> None:
        with self._state:
            self._closed = True
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.sock.shutdown(socket.SHUT_RDWR)  # the child sees EOF and exits; close() alone would
            worker.sock.close()  # not wake the reply thread blocked in recv()
            try:
                worker.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()

    # -- calls --------------------------------------------------------------------------------

    def _submit(self, method: str, args: tuple, kwargs: dict) -> tuple[int, Future]:
        """Send a call to the child; the future resolves when its reply arrives."""
        request_id = next(self._ids)
        call = _Call(method, (request_id, method, args, kwargs))
        with self._state:
            while (self._worker is None or (call.is_write and self._killing)) and not self._closed:
                if self._failure is not None:
                    raise self._failure
                self._state.wait()  # the child is restarting; writes also wait while a kill is due
            if self._closed or self._worker is None:
                raise StoreUnavailable("the store is closed")
            self._pending[request_id] = call
            if call.is_write:
                self._writes_running += 1
            worker = self._worker
        try:
            _send(worker.sock, worker.send_lock, call.frame)
        except OSError:
            pass  # the child just died: once restarted, _after_exit resends this call (or fails a write)
        return request_id, call.future

    def _timed_out(self, request_id: int, timeout: float) -> QueryTimeout:
        self._stop_overdue(request_id)
        return QueryTimeout(
            f"the query ran past its {timeout:g} s limit and was stopped; narrow it, add LIMIT, "
            "or raise the limit with the timeout parameter"
        )

    def _call(self, method: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        request_id, future = self._submit(method, args, kwargs)
        try:
            return future.result(timeout)
        except FutureTimeout:
            raise self._timed_out(request_id, timeout or 0) from None

    async def call_async(self, method: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        """`method(*args, **kwargs)` awaited on the event loop without tying up a thread.

        Small calls are sent from the loop itself; large payloads, and calls made while the
        child restarts (which block until it is back), are sent from a thread.
        """
        if self._worker is not None and all(not isinstance(a, (str, bytes)) or len(a) < 65536 for a in args):
            request_id, future = self._submit(method, args, kwargs)
        else:
            request_id, future = await asyncio.to_thread(self._submit, method, args, kwargs)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except TimeoutError:
            raise await asyncio.to_thread(self._timed_out, request_id, timeout or 0) from None

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
            worker.process.kill()

    # -- the QuadStore interface --------------------------------------------------------------

    def query(self, sparql: str, *, timeout: float | None = None, **kwargs: Any) -> Any:
        return self._call("query", sparql, timeout=timeout, **kwargs)

    def update(self, sparql: str, **kwargs: Any) -> None:
        self._call("update", sparql, **kwargs)

    def graph_exists(self, graph: str | None) -> bool:
        return self._call("graph_exists", graph)

    def named_graphs(self) -> list[str]:
        return self._call("named_graphs")

    def serialize_graph(self, graph: str | None, format: RdfFormat, prefixes: dict[str, str] | None = None) -> bytes:
        return self._call("serialize_graph", graph, format, prefixes)

    def replace_graph(self, graph: str | None, source: Path, format: RdfFormat, base_iri: str | None) -> bool:
        return self._call("replace_graph", graph, source, format, base_iri)

    def add_to_graph(self, graph: str | None, source: Path, format: RdfFormat, base_iri: str | None) -> bool:
        return self._call("add_to_graph", graph, source, format, base_iri)

    def add_quads(self, nquads: bytes) -> None:
        self._call("add_quads", nquads)

    def drop_graph(self, graph: str | None) -> None:
        self._call("drop_graph", graph)

    def dump(self, target: Path, format: RdfFormat, graph: str | None = "all") -> None:
        self._call("dump", target, format, graph)

    def load(self, source: Path, format: RdfFormat, **kwargs: Any) -> None:
        self._call("load", source, format, **kwargs)

    def count(self) -> int:
        return self._call("count")

    def optimize(self) -> None:
        self._call("optimize")


def main(argv: list[str]) -> None:
    """Child entry point: fd of the socket, store path, thread count, allow_remote (1/0)."""
    _serve(int(argv[0]), Path(argv[1]), int(argv[2]), argv[3] == "1")
