"""The store process: the child that runs the embedded store for WorkerStore (worker.py), and the
wire both sides speak: length-prefixed pickles over a socketpair. Requests are
(id, method, args, kwargs, lane), replies (id, ok, value-or-exception).

The child serves calls from threads in two lanes (LANES): clients' queries, and the server's
own calls, which clients' queries can then never hold up. Each thread marks the call it runs
in the running table (crash_report.py), so the parent knows what was running if the process
dies. With remote access off, it runs under the socket filter (sandbox.py) from its start.
"""

from __future__ import annotations

import contextlib
import copyreg
import os
import pickle
import queue
import socket
import struct
import threading
from pathlib import Path
from typing import Any

from pyoxigraph import RdfFormat

from sparqlrag.store import crash_report, sandbox
from sparqlrag.store.base import DISK_FULL, StorageFull, StoreError, StoreInternalError, disk_full

_FRAME = struct.Struct(">Q")
_RDF_FORMATS = {fmt.name: fmt for fmt in (getattr(RdfFormat, n) for n in dir(RdfFormat) if n.isupper())}


def _rdf_format(name: str) -> RdfFormat:
    found: RdfFormat = _RDF_FORMATS[name]
    return found


copyreg.pickle(RdfFormat, lambda fmt: (_rdf_format, (fmt.name,)))

READ_METHODS = frozenset({"query", "graph_exists", "named_graphs", "serialize_graph", "count", "dump"})
WRITE_METHODS = frozenset({"update", "replace_graph", "add_to_graph", "add_quads", "drop_graph", "load", "optimize"})
LANES = ("client", "internal")  # a call with a deadline (a client's query) runs in the first
INTERNAL_THREADS = 4


def send(sock: socket.socket, lock: threading.Lock, message: object) -> None:
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


def recv(sock: socket.socket) -> tuple[object, ...] | None:
    """The next message (a tuple: a request or a reply), or None when the other side has gone."""
    try:
        header = _recv_exactly(sock, _FRAME.size)
        if header is None:
            return None
        payload = _recv_exactly(sock, _FRAME.unpack(header)[0])
    except OSError:
        return None
    return None if payload is None else pickle.loads(payload)


def serve(fd: int, path: Path, threads: int, allow_remote: bool, table_fd: int, dump_fd: int) -> None:
    from sparqlrag.store.embedded import EmbeddedStore

    if not allow_remote:
        with contextlib.suppress(sandbox.SandboxUnavailable):  # then the store refuses SERVICE/LOAD by their words
            sandbox.deny_network(whole_process=True)
    crash_report.report_fatal_signals(os.fdopen(dump_fd, "w"))
    table = crash_report.RunningTable(os.fdopen(table_fd, "r+b"), len(slots(threads)))
    sock = socket.socket(fileno=fd)
    lock = threading.Lock()
    try:
        store = EmbeddedStore(path, allow_remote=allow_remote)
    except StoreError as error:
        send(sock, lock, ("ready", False, error))
        return
    send(sock, lock, ("ready", True, None))

    def run(slot: int, request_id: int, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        thread = threading.get_ident()
        # a write counts as running (not safe to resend) only once it holds the write lock
        exclusive = store.write_lock if method in WRITE_METHODS else contextlib.nullcontext()
        try:
            if method not in READ_METHODS | WRITE_METHODS:
                raise StoreInternalError(f"unknown store method {method!r}")
            with exclusive:
                table.mark(slot, thread, request_id)
                reply = (request_id, True, getattr(store, method)(*args, **kwargs))
        except StoreError as error:
            reply = (request_id, False, error)
        except Exception as error:  # a full disk, or a bug: report it rather than leave the caller waiting
            failure = (
                StorageFull(DISK_FULL) if disk_full(error) else StoreInternalError(f"{type(error).__name__}: {error}")
            )
            reply = (request_id, False, failure)
        try:
            send(sock, lock, reply)
        except OSError:
            pass  # the parent went away; nothing to report to
        finally:
            table.clear(slot, thread)  # only once the reply is out: a crash before it leaves the call "running"

    queues: dict[str, queue.SimpleQueue[tuple[Any, ...]]] = {lane: queue.SimpleQueue() for lane in LANES}

    def receive() -> None:
        """Hand each request to its lane's threads."""
        while (message := recv(sock)) is not None:
            *call, lane = message
            queues[str(lane)].put(tuple(call))
        store.close()
        os._exit(0)  # the parent is gone: do not wait for running queries

    def serve_lane(slot: int, lane: str) -> None:
        crash_report.prepare_thread()
        while True:
            run(slot, *queues[lane].get())

    workers = [threading.Thread(target=receive, name="store-receive")] + [
        threading.Thread(target=serve_lane, args=(slot, lane), name=f"store-{lane}-{slot}")
        for slot, lane in enumerate(slots(threads))
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def slots(threads: int) -> list[str]:
    """The lane of each of the child's threads: `threads` for clients' queries, INTERNAL_THREADS
    more for the server's own calls, which clients' queries can then never hold up."""
    return ["client"] * max(1, threads) + ["internal"] * INTERNAL_THREADS


def main(argv: list[str]) -> None:
    """Child entry point: fd of the socket, store path, thread count, allow_remote (1/0), fds of
    the running table and of the crash dump."""
    serve(int(argv[0]), Path(argv[1]), int(argv[2]), argv[3] == "1", int(argv[4]), int(argv[5]))
