"""The store process: the child that runs the embedded store for WorkerStore (worker.py), and the
wire both sides speak: length-prefixed pickles over socketpairs. Requests are
(id, method, args, kwargs), replies (id, ok, value-or-exception).

Each of the child's serving threads owns one connection to the parent and answers the calls
sent on it one at a time, with no queue or hand-over between threads: a small read costs one
message each way. The parent keeps the connections in two lanes (LANES): clients' queries, and
the server's own calls, which clients' queries can then never hold up. Each thread marks the
call it runs in the running table (crash_report.py), so the parent knows what was running if
the process dies. A control connection tells the parent the store is open, and tells the child
the parent has gone. With remote access off, the child runs under the socket filter
(sandbox.py) from its start.
"""

from __future__ import annotations

import contextlib
import copyreg
import os
import pickle
import socket
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from pyoxigraph import RdfFormat

from sparqlrag.store import crash_report, sandbox
from sparqlrag.store.base import (
    DISK_FULL,
    QueryResult,
    StorageFull,
    StoreError,
    StoreInternalError,
    StoreUnavailable,
    disk_full,
)

_FRAME = struct.Struct(">Q")
HEADER = _FRAME.size  # bytes of a message's length prefix
_RDF_FORMATS = {fmt.name: fmt for fmt in (getattr(RdfFormat, n) for n in dir(RdfFormat) if n.isupper())}


def _rdf_format(name: str) -> RdfFormat:
    found: RdfFormat = _RDF_FORMATS[name]
    return found


copyreg.pickle(RdfFormat, lambda fmt: (_rdf_format, (fmt.name,)))

# a read (kwarg "of": one of STREAMABLE, which take `emit`) whose answer is sent in pieces as it is
# written, each (id, PIECE, QueryResult), before its reply
STREAM = "stream"
PIECE = "piece"
STREAMABLE = frozenset({"query", "serialize_graph"})
READ_METHODS = frozenset({"query", STREAM, "graph_exists", "named_graphs", "serialize_graph", "count", "dump"})
WRITE_METHODS = frozenset({"update", "replace_graph", "add_to_graph", "add_quads", "drop_graph", "load", "optimize"})
LANES = ("client", "internal")  # a call with a deadline (a client's query) runs in the first
INTERNAL_THREADS = 4


def send(sock: socket.socket, message: object) -> None:
    """Send one message; each connection has one sender at a time (its owner)."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_FRAME.pack(len(data)) + data)


def header_size(header: bytes) -> int:
    size: int = _FRAME.unpack(header)[0]
    return size


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
    """The next message (a tuple: a request or a reply), or None when the other side has gone.
    TimeoutError past the socket's timeout."""
    try:
        header = _recv_exactly(sock, _FRAME.size)
        if header is None:
            return None
        payload = _recv_exactly(sock, header_size(header))
    except TimeoutError:
        raise
    except OSError:
        return None
    return None if payload is None else pickle.loads(payload)


def _sender(sock: socket.socket, request_id: int) -> Callable[[QueryResult], None]:
    """Sends each piece of a streamed result. The socket's buffer holds only so much: while the
    parent is not reading (its client is slow), sending waits, and so does the query."""

    def emit(piece: QueryResult) -> None:
        try:
            send(sock, (request_id, PIECE, piece))
        except OSError:
            raise StoreUnavailable("the reader of this result has gone") from None

    return emit


def serve(control_fd: int, path: Path, allow_remote: bool, table_fd: int, dump_fd: int, connections: list[int]) -> None:
    from sparqlrag.store.embedded import EmbeddedStore

    if not allow_remote:
        with contextlib.suppress(sandbox.SandboxUnavailable):  # then the store refuses SERVICE/LOAD by their words
            sandbox.deny_network(whole_process=True)
    crash_report.report_fatal_signals(os.fdopen(dump_fd, "w"))
    table = crash_report.RunningTable(os.fdopen(table_fd, "r+b"), len(connections))
    control = socket.socket(fileno=control_fd)
    try:
        store = EmbeddedStore(path, allow_remote=allow_remote)
    except StoreError as error:
        send(control, ("ready", False, error))
        return

    def run(
        sock: socket.socket, slot: int, request_id: int, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, ...]:
        # a write counts as running (not safe to resend) only once it holds the write lock
        exclusive = store.write_lock if method in WRITE_METHODS else contextlib.nullcontext()
        try:
            if method not in READ_METHODS | WRITE_METHODS:
                raise StoreInternalError(f"unknown store method {method!r}")
            if method == STREAM:  # a read whose answer leaves in pieces on `sock` as it is written
                method, kwargs = kwargs["of"], {**kwargs, "emit": _sender(sock, request_id)}
                del kwargs["of"]
                if method not in STREAMABLE:
                    raise StoreInternalError(f"{method!r} cannot be streamed")
            with exclusive:
                table.mark(slot, threading.get_ident(), request_id)
                return (request_id, True, getattr(store, method)(*args, **kwargs))
        except StoreError as error:
            return (request_id, False, error)
        except Exception as error:  # a full disk, or a bug: report it rather than leave the caller waiting
            failure = (
                StorageFull(DISK_FULL) if disk_full(error) else StoreInternalError(f"{type(error).__name__}: {error}")
            )
            return (request_id, False, failure)

    def serve_connection(slot: int, sock: socket.socket) -> None:
        crash_report.prepare_thread()
        thread = threading.get_ident()
        while (message := recv(sock)) is not None:
            try:
                send(sock, run(sock, slot, *cast(tuple[int, str, tuple[Any, ...], dict[str, Any]], message)))
            except OSError:
                return  # the parent went away; nothing to report to
            finally:
                table.clear(slot, thread)  # only once the reply is out: a crash before it leaves the call "running"

    for slot, fd in enumerate(connections):
        thread = threading.Thread(
            target=serve_connection, args=(slot, socket.socket(fileno=fd)), name=f"store-{slot}", daemon=True
        )
        thread.start()
    send(control, ("ready", True, None))
    recv(control)  # returns once the parent is gone or closes the store
    store.close()
    os._exit(0)  # do not wait for running queries


def slots(threads: int) -> list[str]:
    """The lane of each connection (and so of each of the child's threads): `threads` for clients'
    queries, INTERNAL_THREADS more for the server's own calls, which clients' queries can then
    never hold up."""
    return ["client"] * max(1, threads) + ["internal"] * INTERNAL_THREADS


def main(argv: list[str]) -> None:
    """Child entry point: fd of the control socket, store path, allow_remote (1/0), fds of the
    running table and of the crash dump, then the fd of each connection (one serving thread each)."""
    serve(int(argv[0]), Path(argv[1]), argv[2] == "1", int(argv[3]), int(argv[4]), [int(fd) for fd in argv[5:]])
