"""The store interface and its errors.

The interface speaks SPARQL text and serialized RDF (bytes or file paths), never live
pyoxigraph objects, so the same calls work in-process, across a process boundary
(WorkerStore) and, later, against a remote SPARQL 1.1 endpoint.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import sqlite3
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NotRequired, Protocol, TypedDict, Unpack

from pyoxigraph import RdfFormat

Graph = str | None
"""A graph name: an IRI string, or None for the default graph."""

ResultKind = Literal["boolean", "solutions", "graph"]


class StoreError(Exception):
    """Base of every error the store reports; the message is safe to show to a client."""


class QuerySyntaxError(StoreError):
    """The SPARQL query or update does not parse."""


class DataSyntaxError(StoreError):
    """Uploaded RDF does not parse in the declared format."""


class GraphNotFound(StoreError):
    """The named graph does not exist."""


class NotAcceptable(StoreError):
    """The result cannot be written in any format the client accepts."""


class UpdateDatasetConflict(StoreError):
    """The protocol names a dataset (using-graph-uri) and the update has its own USING/WITH."""


class QueryTimeout(StoreError):
    """The operation ran past its deadline and was stopped."""


class ClientGone(StoreError):
    """The client a call worked for hung up, and the call was stopped (nobody reads this answer)."""


class ResultTooLarge(StoreError):
    """A query's result is over the byte limit the caller set (a client's query, max_result_bytes)."""


class QueryEvaluationError(StoreError):
    """The query parsed but could not be evaluated."""


class RemoteAccessRefused(StoreError):
    """SERVICE / LOAD would make the server fetch a URL, and remote access is off."""


class RemoteSourceFailed(StoreError):
    """With remote access on, a SERVICE or LOAD source failed (its answer is never shown)."""


class QueryCrashed(StoreError):
    """The operation stopped the store process (too deep to evaluate, or out of memory); it is
    not run again, and the same text is refused until the server restarts (`stopped_store` is
    False on those refusals)."""

    stopped_store = True


class StoreLocked(StoreError):
    """Another process (usually a running server) holds the data directory."""


class StoreUnavailable(StoreError):
    """The store process died or could not start."""


class StorageFull(StoreError):
    """The disk holding the data directory is full: the write was not applied."""


DISK_FULL = (
    "the disk holding the server's data is full: nothing of this request was written; "
    "the server goes on once space is freed"
)


def disk_full(error: BaseException) -> bool:
    """An error saying the disk is full, whichever layer raised it: the OS (ENOSPC), SQLite
    (the indexes), or RocksDB (whose IO errors reach Python with its message only)."""
    if isinstance(error, StorageFull) or (isinstance(error, OSError) and error.errno == errno.ENOSPC):
        return True
    return isinstance(error, (OSError, sqlite3.OperationalError)) and any(
        words in str(error) for words in ("No space left on device", "database or disk is full")
    )


class RemoteStoreFailed(StoreError):
    """A remote store could not be reached, refused our credentials, or failed (a 502: the
    message names the store, never repeats its answer)."""


class StoreInternalError(StoreError):
    """An unexpected failure inside the store: a bug, reported as a 5xx. Its message is for
    the log; clients get a fixed text."""


@dataclass(frozen=True)
class QueryResult:
    """A serialized query answer, in the format the Accept header preferred for its kind."""

    kind: ResultKind
    media_type: str
    body: bytes


class QueryOptions(TypedDict):
    """A client's query's options, as `QuadStore.query` takes them."""

    accept: str | None
    base_iri: str | None
    default_graphs: Sequence[Graph] | None
    named_graphs: Sequence[str] | None
    union_default_graph: NotRequired[bool]
    timeout: float | None
    max_bytes: int | None


@dataclass(frozen=True)
class ResultStream:
    """A query answer that may still be arriving: `head` has its kind, media type and first
    piece (the whole answer when `rest` is None); `rest` yields the pieces after it, and raises
    if the answer cannot be finished (the query passed its deadline, or the result its byte cap)."""

    head: QueryResult
    rest: AsyncGenerator[bytes, None] | None = None


class QuadStore(Protocol):
    """What the server and CLI need from a quad store.

    EmbeddedStore implements it in-process, WorkerStore in a child process it can kill, and
    RemoteStore over the SPARQL protocol. Code on the event loop calls every method through
    `threads.off_loop(store.method, ...)`; nothing else in the code reaches past them. What a
    store can do beyond answering is declared, never guessed from its class: whether a call
    stops when the client it serves hangs up, whether `load` reads an open file as it loads, and
    how a client's answer is handed on (`streamed_query`, `streamed_graph`).

    A query's `timeout` is the seconds it may run: WorkerStore and RemoteStore stop it then and
    raise QueryTimeout; EmbeddedStore runs in the caller's own thread and cannot stop it, so it
    ignores the deadline (the server always runs on a WorkerStore or a RemoteStore). An update
    has no deadline on purpose: it is one transaction, applied whole, and a caller told "timed
    out" could not know whether it had been.
    """

    cancels_on_hang_up: bool
    """Whether a call stops when the client it serves hangs up (its thread carries deadlines.CANCEL)."""
    loads_readers: bool
    """Whether `load` takes an open binary file and reads it as it loads (a progress bar can follow)."""

    async def streamed_query(self, sparql: str, **options: Unpack[QueryOptions]) -> ResultStream:
        """A client's query, handed on as it comes where the store can (`answered_whole` else)."""
        ...

    async def streamed_graph(self, graph: Graph, format: RdfFormat, media_type: str, timeout: float) -> ResultStream:
        """A client's read of a graph in `format` (its media type `media_type`), within `timeout`."""
        ...

    def healthy(self) -> bool:
        """Whether the store can serve, answered without waiting behind running queries (a
        liveness probe asks this); a store that cannot tell without a request makes a trivial one."""
        ...

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
    ) -> QueryResult: ...

    def update(
        self,
        sparql: str,
        *,
        base_iri: str | None = None,
        using_graphs: list[str] | None = None,
        using_named_graphs: Sequence[str] | None = None,
    ) -> None: ...

    def graph_exists(self, graph: Graph) -> bool: ...

    def named_graphs(self) -> list[str]: ...

    def serialize_graph(self, graph: Graph, format: RdfFormat, prefixes: dict[str, str] | None = None) -> bytes: ...

    def replace_graph(
        self, graph: Graph, source: Path, format: RdfFormat, base_iri: str | None, bulk: bool = False
    ) -> bool:
        """Replace a graph's content (True if it existed): atomically, or with `bulk` faster and
        in bounded memory where the store can (not atomic: see the embedded store's)."""
        ...

    def add_to_graph(self, graph: Graph, source: Path, format: RdfFormat, base_iri: str | None) -> bool: ...

    def add_quads(self, nquads: bytes) -> None: ...

    def drop_graph(self, graph: Graph) -> None: ...

    def dump(self, target: Path, format: RdfFormat, graph: Graph | Literal["all"] = "all") -> None: ...

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
    ) -> None: ...

    def count(self) -> int: ...

    def close(self) -> None: ...


async def answered_whole(store: QuadStore, sparql: str, **options: Unpack[QueryOptions]) -> ResultStream:
    """A client's query answered whole, in a thread: for a store that cannot hand it on in pieces."""
    return ResultStream(await asyncio.to_thread(functools.partial(store.query, sparql, **options)))


async def graph_whole(store: QuadStore, graph: Graph, format: RdfFormat, media_type: str) -> ResultStream:
    """A client's read of a graph written whole, in a thread."""
    return ResultStream(QueryResult("graph", media_type, await asyncio.to_thread(store.serialize_graph, graph, format)))
