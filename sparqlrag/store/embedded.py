"""The embedded quad store: pyoxigraph (RocksDB) on disk, or in memory for path=None."""

from __future__ import annotations

import functools
import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, TypeVar, Unpack, cast

from pyoxigraph import (
    DefaultGraph,
    NamedNode,
    QueryBoolean,
    QuerySolutions,
    QueryTriples,
    RdfFormat,
    Store,
    parse,
)

from sparqlrag.store import sandbox
from sparqlrag.store.base import (
    DISK_FULL,
    DataSyntaxError,
    Graph,
    GraphNotFound,
    NotAcceptable,
    QueryEvaluationError,
    QueryOptions,
    QueryResult,
    QuerySyntaxError,
    RemoteAccessRefused,
    RemoteSourceFailed,
    ResultStream,
    StorageFull,
    StoreError,
    StoreInternalError,
    StoreLocked,
    StoreUnavailable,
    answered_whole,
    disk_full,
    graph_whole,
)
from sparqlrag.store.results import CappedWriter, Emit, ReadTriples, Triples, serialize_result
from sparqlrag.store.sparql_text import apply_update_dataset, iri_ref, misread_query, query_form
from sparqlrag.store.xml_entities import check_entity_expansion

Source = Path | BinaryIO
T = TypeVar("T")
log = logging.getLogger(__name__)
# RocksDB keeps every write in memtables (one per column family, about a dozen) until they
# fill, so a long ingest grew RSS by about 0.9 KB a quad; flushing after this much written text
# keeps it flat and costs nothing measurable (bench/RESULTS.md, issue 18, memory).
FLUSH_AFTER_BYTES = 4 * 2**20
DROP_COST = 2**16  # a graph's removal writes tombstones its request text does not show
REMOTE_REFUSED = (
    "SERVICE and LOAD would make the server fetch a URL, and remote access is off "
    "(set SPARQLRAG_ALLOW_REMOTE=true to allow it)"
)


def _exclusive(method: Callable[..., T]) -> Callable[..., T]:
    """Run a write method under the store's writer lock: writes apply one at a time."""

    @functools.wraps(method)
    def locked(self: EmbeddedStore, *args: Any, **kwargs: Any) -> T:
        with self.write_lock:
            return method(self, *args, **kwargs)

    return locked


def graph_node(graph: Graph) -> NamedNode | DefaultGraph:
    return DefaultGraph() if graph is None else NamedNode(graph)


def _dataset_graph(graph: Graph) -> NamedNode | DefaultGraph:
    """A graph of a protocol dataset (default-graph-uri, named-graph-uri), which clients send."""
    try:
        return graph_node(graph)
    except ValueError:
        raise QuerySyntaxError(f"the dataset names {graph!r}, which is not an absolute IRI") from None


def _source_kwargs(source: Source, format: RdfFormat) -> dict[str, Any]:
    """pyoxigraph's arguments for reading `source`, once it is known to be safe to parse."""
    if format == RdfFormat.RDF_XML:
        check_entity_expansion(source)
    return {"path": str(source)} if isinstance(source, Path) else {"input": source}


class EmbeddedStore:
    """pyoxigraph behind the QuadStore interface.

    Thread-safe: reads run concurrently (pyoxigraph releases the GIL); writes take one lock,
    so a write can reason about the state it starts from (see `load`).
    """

    cancels_on_hang_up = False  # (a call runs in the caller's thread to its end)
    loads_readers = True

    def __init__(self, path: Path | None = None, *, allow_remote: bool = False) -> None:
        self.path = path
        self.allow_remote = allow_remote
        self.write_lock = threading.RLock()  # writes hold it; the worker takes it to know a write has begun
        self._unflushed = 0  # bytes of written text since the memtables were last flushed
        try:
            self._store = Store(str(path)) if path is not None else Store()
        except OSError as error:
            if "lock" in str(error).lower():
                raise StoreLocked(
                    f"the store at {path} is in use by another process (is `sparqlrag serve` running "
                    "on this data directory?); stop it, or use its HTTP endpoints"
                ) from error
            if disk_full(error):
                raise StorageFull(DISK_FULL) from error
            raise StoreUnavailable(f"cannot open the store at {path}: {error}") from error

    def close(self) -> None:
        """Flush and release the RocksDB lock (pyoxigraph closes when the object is dropped)."""
        self._store.flush()
        del self._store

    # -- SPARQL -------------------------------------------------------------------------------

    def _sparql(self, operation: Callable[..., T], sparql: str, *args: object) -> T:
        """Run `operation` (which evaluates `sparql`) where it cannot reach the network, unless
        remote access is allowed. Oxigraph reaches out only for a SERVICE or LOAD in the text,
        so text without those words runs here; text with them runs on this thread when it is
        already filtered (the worker), else on the filtered pool, else (no filter on this
        system) not at all."""
        if self.allow_remote or sandbox.network_denied() or not sandbox.mentions_remote_access(sparql):
            return operation(sparql, *args)
        pool = sandbox.offline_pool()
        if pool is None:
            raise RemoteAccessRefused(
                REMOTE_REFUSED + "; this system cannot sandbox the store, so the words SERVICE and LOAD are "
                "refused anywhere in a query or update"
            )
        return pool.run(operation, sparql, *args)

    def _evaluation_error(self, error: Exception, sparql: str, what: str) -> StoreError:
        """What a client may be told of a failure while `sparql` ran: Oxigraph's own words about
        the request, never an I/O error's text or a remote server's answer. Oxigraph reaches the
        network only for a SERVICE or LOAD in the text, so without those words a failure is the
        store's; with them, an I/O error is the refused (or failed) remote access."""
        remote = (isinstance(error, OSError) or self.allow_remote) and sandbox.mentions_remote_access(sparql)
        if remote and not self.allow_remote:
            return RemoteAccessRefused(REMOTE_REFUSED)
        if remote:
            return RemoteSourceFailed(
                f"the {what} failed while it read a SERVICE or LOAD source; the source's answer is not shown"
            )
        if disk_full(error):
            return StorageFull(DISK_FULL)
        if isinstance(error, OSError):
            return StoreInternalError(f"{what} failed in the store: {error}")
        return QueryEvaluationError(f"{what} evaluation failed: {error}")

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
        emit: Emit | None = None,
    ) -> QueryResult:
        """Evaluate and serialize in the format `accept` prefers for the query's kind
        (ResultTooLarge once the result passes `max_bytes`); with `emit`, the result is handed
        to it in pieces as it is written (results.serialize_result). `timeout` is not kept: a query in
        this thread cannot be stopped (base.QuadStore; WorkerStore keeps it).

        A protocol dataset (default_graphs / named_graphs) replaces the query's FROM clauses;
        naming only one half leaves the other empty, as the SPARQL 1.1 Protocol says.
        """
        kwargs: dict[str, object] = {"base_iri": base_iri}
        if default_graphs is not None or named_graphs is not None:
            kwargs["default_graph"] = [_dataset_graph(g) for g in default_graphs or []]
            kwargs["named_graphs"] = [_dataset_graph(g) for g in named_graphs or []]
        elif union_default_graph:
            kwargs["use_default_graph_as_union"] = True
        return self._sparql(self._evaluate, sparql, kwargs, accept, max_bytes, emit)

    def _evaluate(
        self, sparql: str, kwargs: dict[str, Any], accept: str | None, max_bytes: int | None, emit: Emit | None
    ) -> QueryResult:
        try:
            result = self._store.query(sparql, **kwargs)
        except SyntaxError as error:
            raise QuerySyntaxError(f"query syntax error: {misread_query(sparql) or error}") from error
        except (OSError, ValueError, RuntimeError) as error:
            raise self._evaluation_error(error, sparql, "query") from error
        # Results stream: evaluation goes on while they are written. pyoxigraph's results must
        # be dropped on this thread, so no error leaves with a frame that still holds them.
        answer: QueryBoolean | QuerySolutions | Triples = result
        if isinstance(result, QueryTriples) and query_form(sparql) == "DESCRIBE":
            answer = ReadTriples(result, distinct=True)
        try:
            return serialize_result(answer, accept, max_bytes, emit)
        except Exception as error:
            error.__traceback__ = None
            failure = error if isinstance(error, StoreError) else self._evaluation_error(error, sparql, "query")
        finally:
            del result, answer
        raise failure

    @_exclusive
    def update(
        self,
        sparql: str,
        *,
        base_iri: str | None = None,
        using_graphs: list[str] | None = None,
        using_named_graphs: Sequence[str] | None = None,
    ) -> None:
        """Run an update atomically (pyoxigraph applies the whole request or nothing)."""
        text = apply_update_dataset(sparql, using_graphs or [], using_named_graphs or [])
        self._sparql(self._apply, text, base_iri)
        self._wrote(len(text))

    def _apply(self, sparql: str, base_iri: str | None) -> None:
        try:
            self._store.update(sparql, base_iri=base_iri)
        except SyntaxError as error:
            raise QuerySyntaxError(f"update syntax error: {error}") from error
        except (OSError, ValueError, RuntimeError) as error:
            raise self._evaluation_error(error, sparql, "update") from error

    # -- graphs -------------------------------------------------------------------------------

    def graph_exists(self, graph: Graph) -> bool:
        return graph is None or self._store.contains_named_graph(NamedNode(graph))

    def named_graphs(self) -> list[str]:
        return sorted(g.value for g in self._store.named_graphs() if isinstance(g, NamedNode))

    def serialize_graph(
        self, graph: Graph, format: RdfFormat, prefixes: dict[str, str] | None = None, emit: Emit | None = None
    ) -> bytes:
        """The graph in `format`, with `prefixes` where the format has them (Turtle, RDF/XML);
        with `emit`, handed to it in pieces as it is written, and only the last piece returned."""
        if not self.graph_exists(graph):
            raise GraphNotFound(f"graph <{graph}> does not exist")
        written = CappedWriter(None, QueryResult("graph", "", b""), emit) if emit is not None else None
        try:
            whole = self._store.dump(
                cast(IO[bytes] | None, written), format=format, from_graph=graph_node(graph), prefixes=prefixes
            )
        except OSError as error:
            raise NotAcceptable(f"cannot write this graph as {format.name}: {error}") from error
        return written.value() if written is not None else whole or b""

    @_exclusive
    def replace_graph(
        self, graph: Graph, source: Source, format: RdfFormat, base_iri: str | None, bulk: bool = False
    ) -> bool:
        """Replace a graph's content; True if the graph existed before.

        The data is parsed into a scratch graph first (one transaction: bad data writes
        nothing), then one MOVE update swaps it in: atomic, but a transaction holds the whole
        graph in memory twice and MOVE copies it quad by quad (500k triples: minutes, 1.5 GB).
        `bulk`: checked strictly first (bad data writes nothing), then the graph is cleared and
        bulk-loaded, as a large dataset load is: fast and in bounded memory, but a reader may
        see the graph part-loaded, and a crash part-way leaves part of it.
        """
        existed = self.graph_exists(graph)
        reading = _source_kwargs(source, format)
        if bulk:
            check_syntax(source, format, base_iri)
            self._store.clear_graph(graph_node(graph))
            self._store.bulk_load(format=format, to_graph=graph_node(graph), base_iri=base_iri, lenient=True, **reading)
            if graph is not None:
                self._store.add_graph(NamedNode(graph))
            self._wrote(_size(source))
            return existed
        scratch = NamedNode(f"urn:sparqlrag:scratch:{uuid.uuid4()}")
        self._store.add_graph(scratch)
        try:
            self._store.load(format=format, to_graph=scratch, base_iri=base_iri, **reading)
        except SyntaxError as error:
            self._store.remove_graph(scratch)
            raise _data_error(error, format, source) from error
        target = "DEFAULT" if graph is None else f"GRAPH {iri_ref(graph)}"
        self._store.update(f"MOVE SILENT GRAPH <{scratch.value}> TO {target}")
        if graph is not None:
            self._store.add_graph(NamedNode(graph))
        self._wrote(_size(source))
        return existed

    @_exclusive
    def add_to_graph(self, graph: Graph, source: Source, format: RdfFormat, base_iri: str | None) -> bool:
        """Merge data into a graph in one transaction; True if the graph existed before."""
        existed = self.graph_exists(graph)
        try:
            self._store.load(
                format=format, to_graph=graph_node(graph), base_iri=base_iri, **_source_kwargs(source, format)
            )
        except SyntaxError as error:
            raise _data_error(error, format, source) from error
        if graph is not None:
            self._store.add_graph(NamedNode(graph))
        self._wrote(_size(source))
        return existed

    @_exclusive
    def add_quads(self, nquads: bytes) -> None:
        """Add serialized quads (N-Quads) in one transaction: all of them or none."""
        try:
            self._store.load(input=nquads, format=RdfFormat.N_QUADS)
        except SyntaxError as error:
            raise DataSyntaxError(f"invalid N-Quads data: {error}") from error
        self._wrote(len(nquads))

    @_exclusive
    def drop_graph(self, graph: Graph) -> None:
        """Delete a named graph, or empty the default graph (which always exists)."""
        if graph is None:
            self._store.clear_graph(DefaultGraph())
        elif not self.graph_exists(graph):
            raise GraphNotFound(f"graph <{graph}> does not exist")
        else:
            self._store.remove_graph(NamedNode(graph))
        self._wrote(DROP_COST)

    def _wrote(self, size: int) -> None:
        """Count a committed write; flush the memtables once enough has been written. A failed
        flush loses nothing (the write is in RocksDB's log), so it is only logged and retried."""
        self._unflushed += size
        if self._unflushed < FLUSH_AFTER_BYTES:
            return
        try:
            self._store.flush()
        except OSError as error:
            log.warning("could not flush the store's memtables (%s); will try again", error)
            return
        self._unflushed = 0

    # -- whole dataset ------------------------------------------------------------------------

    def dump(self, target: Path | BinaryIO, format: RdfFormat, graph: Graph | Literal["all"] = "all") -> None:
        """Write the dataset (graph="all", needs TriG or N-Quads) or one graph to a file."""
        if graph == "all":
            if not format.supports_datasets:
                raise NotAcceptable(f"{format.name} cannot hold named graphs; dump the dataset as TriG or N-Quads")
            self._store.dump(str(target) if isinstance(target, Path) else target, format=format)
            return
        if not self.graph_exists(graph):
            raise GraphNotFound(f"graph <{graph}> does not exist")
        try:
            self._store.dump(
                str(target) if isinstance(target, Path) else target, format=format, from_graph=graph_node(graph)
            )
        except OSError as error:
            raise NotAcceptable(f"cannot write this graph as {format.name}: {error}") from error

    @_exclusive
    def load(
        self,
        source: Source,
        format: RdfFormat,
        *,
        graph: Graph = None,
        base_iri: str | None = None,
        replace: bool = False,
        bulk: bool = False,
        checked: bool = True,
    ) -> None:
        """Load a file into one graph (triple formats) or the dataset (quad formats).

        replace=True empties the target (graph, or whole dataset for quad formats) first.
        bulk=True uses pyoxigraph's bulk loader (about 4x faster, not transactional). With
        checked=True bad data leaves the store untouched: the file is parsed strictly first,
        or, when the store is empty, the store is emptied again on error (no extra pass).
        checked=False skips both (Oxigraph's `no_transaction`): fastest, but a syntax error
        part-way may leave the data before it loaded.
        """
        if replace and not format.supports_datasets:
            self.replace_graph(graph, source, format, base_iri)
            return
        # Into an empty store, bad data is undone by emptying it again: no check pass needed.
        restore_by_clearing = bulk and checked and not replace and self._is_empty()
        if checked and (bulk or replace) and not restore_by_clearing:
            check_syntax(source, format, base_iri)
        kwargs = {"format": format, "base_iri": base_iri, **_source_kwargs(source, format)}
        if replace:
            self._store.clear()
        if not format.supports_datasets:
            kwargs["to_graph"] = graph_node(graph)
        try:
            if bulk:  # a file that passed check_syntax need not be validated again
                self._store.bulk_load(lenient=checked and not restore_by_clearing, **kwargs)
            else:
                self._store.load(**kwargs)
        except SyntaxError as error:
            if restore_by_clearing:
                self._store.clear()
            raise _data_error(error, format, source) from error
        if graph is not None and not format.supports_datasets:
            self._store.add_graph(NamedNode(graph))
        self._wrote(_size(source))

    def _is_empty(self) -> bool:
        no_quads = next(iter(self._store.quads_for_pattern(None, None, None, None)), None) is None
        return no_quads and next(iter(self._store.named_graphs()), None) is None

    async def streamed_query(self, sparql: str, **options: Unpack[QueryOptions]) -> ResultStream:
        return await answered_whole(self, sparql, **options)

    async def streamed_graph(self, graph: Graph, format: RdfFormat, media_type: str, timeout: float) -> ResultStream:
        return await graph_whole(self, graph, format, media_type)

    def healthy(self) -> bool:
        """In-process: open is serving."""
        return True

    def count(self) -> int:
        return len(self._store)

    @_exclusive
    def optimize(self) -> None:
        self._store.optimize()


def _size(source: Source) -> int:
    """Bytes in a source about to be read, or the rest of a stream already read (its position)."""
    if isinstance(source, Path):
        return source.stat().st_size
    try:
        return source.tell()
    except (AttributeError, OSError, ValueError):  # a reader that cannot tell (a progress wrapper)
        return FLUSH_AFTER_BYTES  # unknown: flush after it


def _data_error(error: SyntaxError, format: RdfFormat, source: Source) -> DataSyntaxError:
    """The parser's message, without the name of our scratch file (it means nothing to a client)."""
    message = str(error)
    if isinstance(source, Path) and source.name.startswith(("upload-", "part-")):
        message = message.replace(f"({source.name}, ", "(")
    return DataSyntaxError(f"invalid {format.name} data: {message}")


def check_syntax(source: Source, format: RdfFormat, base_iri: str | None) -> None:
    """Parse without storing, so a later non-transactional write cannot stop half-way on bad data."""
    try:
        for _ in parse(format=format, base_iri=base_iri, **_source_kwargs(source, format)):
            pass
    except SyntaxError as error:
        raise _data_error(error, format, source) from error
    finally:
        if not isinstance(source, Path):
            source.seek(0)
