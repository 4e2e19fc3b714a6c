"""A quad store at a SPARQL 1.1 endpoint the organisation already runs (Oxigraph server,
Virtuoso, GraphDB, Jena...), spoken to over HTTP.

Queries and updates go through the SPARQL 1.1 Protocol; graph and dataset writes through the
Graph Store Protocol where the store has one (`gsp_url`), else as one `INSERT DATA` update.
Data is parsed here first, so bad data is refused before anything is sent. Answers come back in
one canonical format and are written again in the format the client asked for, so content
negotiation is the embedded store's. One HTTP client serves every thread (connections are
reused); a read that could not connect is sent again, a write never is. Every request ends
within its total deadline (a query's own limit, else `timeout`) however slowly the store
answers, and an answer past its byte cap is refused (deadlines.py). Errors name the store
(scheme, host, port) and never repeat what it answered.

A store without RDF 1.2 triple terms (Virtuoso; probed on first use, or `triple_terms=False`)
keeps provenance as RDF 1.1 reification: what is written is mapped on the way in, the
`<<( s p o )>>` in queries and updates is rewritten (reification.py), and graphs read back for
dumps and cores are mapped back, so the rest of the server never sees the difference.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Literal, Unpack
from urllib.parse import urlsplit

import httpx
from pyoxigraph import (
    DefaultGraph,
    NamedNode,
    Quad,
    QueryBoolean,
    QueryResultsFormat,
    QuerySolutions,
    RdfFormat,
    Triple,
    parse,
    serialize,
)

from sparqlrag.store.base import (
    ClientGone,
    Graph,
    GraphNotFound,
    NotAcceptable,
    QueryOptions,
    QueryResult,
    QuerySyntaxError,
    QueryTimeout,
    RemoteStoreFailed,
    ResultStream,
    ResultTooLarge,
    graph_whole,
)
from sparqlrag.store.deadlines import AnswerTooLarge, Cancel, DeadlineTransport, deadline, read_capped
from sparqlrag.store.reification import as_rdf11, as_rdf12, sparql_as_rdf11
from sparqlrag.store.remote_answers import NQUADS, NTRIPLES, RESULTS_JSON, streamed_answer, whole_answer
from sparqlrag.store.remote_data import (
    batches,
    boolean_if_ask,
    in_default,
    in_graph,
    insert,
    parsed,
    solutions,
)
from sparqlrag.store.results import Emit, result_too_large
from sparqlrag.store.sparql_text import apply_update_dataset, iri_ref, query_form
from sparqlrag.store.streamed import streamed_from_thread

logger = logging.getLogger(__name__)
READ_ATTEMPTS = 3  # a read that could not connect is sent twice more, after a short pause
WRITE_BATCH = 5_000  # quads per INSERT DATA: stores limit an update's size (Virtuoso's SQL text)
HEALTH_TIMEOUT = 5.0  # seconds a liveness probe waits for the store
MAX_RESPONSE_BYTES = 256 << 20  # what one answer of the store may take in memory, unless set otherwise
REFUSED = (400, 404, 405, 415)  # how a query endpoint answers an update it does not take
PROBE = "ASK { BIND(<<( <urn:sparqlrag:probe> <urn:sparqlrag:probe> <urn:sparqlrag:probe> )>> AS ?t) }"


def store_name(url: str) -> str:
    """What errors call a store: scheme, host and port; never credentials or path."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


class RemoteStore:
    """QuadStore over HTTP. `union_parameter` is how the store is asked to read every graph as
    the default one (Oxigraph: `union-default-graph`); None for a store whose default graph is
    the union already (Virtuoso). `default_graph`: on such a store, the named graph that stands
    for the default graph in graph reads and writes (the Graph Store Protocol's `?default`,
    loads and dumps; SPARQL text goes to the store as it is). `triple_terms`: whether the store
    keeps RDF 1.2 triple terms (None: ask it on first use). `timeout`: the seconds a request
    may take in all (a query: its own limit); `max_response_bytes`: the most one answer may be."""

    cancels_on_hang_up = True  # its requests stop when the client they serve hangs up (deadlines.CANCEL)
    loads_readers = False

    def __init__(
        self,
        query_url: str,
        *,
        update_url: str | None = None,
        gsp_url: str | None = None,
        username: str | None = None,
        password: str | None = None,
        token: str | None = None,
        timeout: float = 60.0,
        union_parameter: str | None = "union-default-graph",
        default_graph: str | None = None,
        triple_terms: bool | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self.max_response_bytes = max_response_bytes
        self.query_url, self.update_url, self.gsp_url = query_url, update_url or query_url, gsp_url
        self._updates_guessed = update_url is None  # sent to the query endpoint, where many stores refuse them
        self.name, self.timeout, self.union_parameter = store_name(query_url), timeout, union_parameter
        auth = httpx.BasicAuth(username, password or "") if username else None
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(
            auth=auth, headers=headers, timeout=timeout, follow_redirects=False, transport=DeadlineTransport()
        )
        self._triple_terms, self._probing = triple_terms, threading.Lock()
        self.default_graph = iri_ref(default_graph)[1:-1] if default_graph else None

    def close(self) -> None:
        self._client.close()

    @property
    def triple_terms(self) -> bool:
        """Whether the store parses `<<( s p o )>>`: asked once (a store that is down is an
        error, not an answer)."""
        if self._triple_terms is not None:
            return self._triple_terms
        with self._probing:  # threads that ask at once wait for one probe
            if self._triple_terms is None:
                try:
                    self._send("query", self.query_url, data={"query": PROBE}, headers={"Accept": RESULTS_JSON})
                    self._triple_terms = True
                except QuerySyntaxError:
                    self._triple_terms = False
            return self._triple_terms

    def _sparql(self, text: str, base_iri: str | None) -> str:
        text = text if self.triple_terms else sparql_as_rdf11(text)
        return f"BASE {iri_ref(base_iri)}\n{text}" if base_iri else text

    # -- the SPARQL Protocol ------------------------------------------------------------------

    async def streamed_query(self, sparql: str, **options: Unpack[QueryOptions]) -> ResultStream:
        """The answer handed on as the store sends it, never whole in memory."""
        return await streamed_from_thread(functools.partial(self.query, sparql, **options))

    async def streamed_graph(self, graph: Graph, format: RdfFormat, media_type: str, timeout: float) -> ResultStream:
        return await graph_whole(self, graph, format, media_type)

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
        """The store's answer, written in the format `accept` prefers for the query's kind;
        past `timeout` seconds (default: the store's), QueryTimeout; an answer, or its writing,
        over `max_bytes` (default: the store's cap), ResultTooLarge. With `emit`, the answer is
        read, written again and handed to it in pieces as the store sends it (never whole in
        memory), within the same deadline and cap; what is returned holds the last piece."""
        form: dict[str, str | list[str]] = {
            "query": self._sparql(sparql, base_iri),
            "default-graph-uri": [g for g in default_graphs or [] if g is not None],
            "named-graph-uri": list(named_graphs or []),
        }
        if union_default_graph and default_graphs is None and named_graphs is None and self.union_parameter:
            form[self.union_parameter] = "true"
        kind = query_form(sparql)  # ask for one kind: Virtuoso answers a CONSTRUCT as solutions if it may
        graph_kind, distinct = kind in ("CONSTRUCT", "DESCRIBE"), kind == "DESCRIBE"
        accepted = NTRIPLES if graph_kind else RESULTS_JSON if kind else f"{RESULTS_JSON}, {NTRIPLES};q=0.9"
        if emit is not None:
            written = functools.partial(
                streamed_answer, store=self.name, accept=accept, max_bytes=max_bytes, emit=emit, distinct=distinct
            )
            return self._send_streamed(form, accepted, timeout, max_bytes, written)
        response = self._send(
            "query", self.query_url, data=form, headers={"Accept": accepted}, timeout=timeout, max_bytes=max_bytes
        )
        return whole_answer(response, store=self.name, accept=accept, max_bytes=max_bytes, distinct=distinct)

    def update(
        self,
        sparql: str,
        *,
        base_iri: str | None = None,
        using_graphs: list[str] | None = None,
        using_named_graphs: Sequence[str] | None = None,
    ) -> None:
        text = apply_update_dataset(sparql, using_graphs or [], using_named_graphs or [])
        response = self._send("update", self.update_url, data={"update": self._sparql(text, base_iri)}, checked=False)
        if response.status_code in REFUSED and self._updates_guessed and not self._takes_updates():
            raise RemoteStoreFailed(
                f"the store at {self.name} takes no updates at its query endpoint (HTTP {response.status_code}): "
                "give its update endpoint with --store-update-url (SPARQLRAG_STORE_UPDATE_URL; Oxigraph: /update, "
                "Fuseki: /DATASET/update, GraphDB: /repositories/REPO/statements)"
            )
        self._checked(response, "update")

    def _takes_updates(self) -> bool:
        """Whether the update endpoint applies an empty update: if not, an update it refused was
        refused for where it was sent, not for what it said."""
        empty = self._send("update", self.update_url, data={"update": "INSERT DATA {}"}, checked=False)
        return empty.status_code < 300

    def healthy(self) -> bool:
        """The store answers a trivial query within HEALTH_TIMEOUT (else the error says why)."""
        self._send("query", self.query_url, data={"query": "ASK {}"}, timeout=min(HEALTH_TIMEOUT, self.timeout))
        return True

    # -- graphs -------------------------------------------------------------------------------

    def graph_exists(self, graph: Graph) -> bool:
        return graph is None or bool(self._read(f"ASK {{ GRAPH {iri_ref(graph)} {{ ?s ?p ?o }} }}"))

    def named_graphs(self) -> list[str]:
        rows = self._read("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
        return sorted(row["g"].value for row in rows if row["g"].value != self.default_graph)  # type: ignore[union-attr]

    def serialize_graph(self, graph: Graph, format: RdfFormat, prefixes: dict[str, str] | None = None) -> bytes:
        if not self.graph_exists(graph):
            raise GraphNotFound(f"graph <{graph}> does not exist")
        try:
            return serialize(self._graph(graph), format=format, prefixes=prefixes) or b""
        except OSError as error:
            raise NotAcceptable(f"cannot write this graph as {format.name}: {error}") from error

    def replace_graph(
        self, graph: Graph, source: Path | BinaryIO, format: RdfFormat, base_iri: str | None, bulk: bool = False
    ) -> bool:
        """Replace a graph's content (see `_write` for how many requests; `bulk` changes nothing:
        the data streams in batches either way); True if it existed before."""
        existed = self.graph_exists(graph)
        self._write(in_graph(parsed(source, format, base_iri), graph), graph, replace=True)
        return existed

    def add_to_graph(self, graph: Graph, source: Path | BinaryIO, format: RdfFormat, base_iri: str | None) -> bool:
        existed = self.graph_exists(graph)
        self._write(in_graph(parsed(source, format, base_iri), graph), graph, replace=False)
        return existed

    def add_quads(self, nquads: bytes) -> None:
        self._write(parsed(nquads, RdfFormat.N_QUADS, None), "all", replace=False)

    def drop_graph(self, graph: Graph) -> None:
        if graph is None:
            self.update(f"CLEAR SILENT GRAPH {iri_ref(self.default_graph)}" if self.default_graph else "CLEAR DEFAULT")
        elif not self.graph_exists(graph):
            raise GraphNotFound(f"graph <{graph}> does not exist")
        else:
            # SILENT: it exists (checked above), but Virtuoso refuses to DROP a graph never CREATEd
            self.update(f"DROP SILENT GRAPH {iri_ref(graph)}")

    # -- whole dataset ------------------------------------------------------------------------

    def dump(self, target: Path | BinaryIO, format: RdfFormat, graph: Graph | Literal["all"] = "all") -> None:
        if graph != "all":
            data = self.serialize_graph(graph, format)
        elif not format.supports_datasets:
            raise NotAcceptable(f"{format.name} cannot hold named graphs; dump the dataset as TriG or N-Quads")
        else:
            quads = [Quad(t.subject, t.predicate, t.object, DefaultGraph()) for t in self._graph(None)]
            for name in self.named_graphs():
                quads += [Quad(t.subject, t.predicate, t.object, NamedNode(name)) for t in self._graph(name)]
            data = serialize(quads, format=format) or b""
        if isinstance(target, Path):
            target.write_bytes(data)
        else:
            target.write(data)

    def load(
        self,
        source: Path | BinaryIO,
        format: RdfFormat,
        *,
        graph: Graph = None,
        base_iri: str | None = None,
        replace: bool = False,
        bulk: bool = False,
        checked: bool = True,
    ) -> None:
        """Parsed here (bad data sends nothing), then written (`_write`). `bulk` and `checked`
        choose the embedded store's loader and change nothing here."""
        quads = parsed(source, format, base_iri)
        if format.supports_datasets:
            self._write(quads, "all", replace=replace)
        else:
            self._write(in_graph(quads, graph), graph, replace=replace)

    def count(self) -> int:
        """Quads in the store: where its default graph is the union of the others (no
        `union_parameter`), the named graphs' alone."""
        default = "{ ?s ?p ?o } UNION " if self.union_parameter else ""
        rows = self._read(f"SELECT (COUNT(*) AS ?n) WHERE {{ {default}{{ GRAPH ?g {{ ?s ?p ?o }} }} }}")
        return int(rows[0]["n"].value)  # type: ignore[index]

    # -- requests -----------------------------------------------------------------------------

    def _read(self, sparql: str) -> QueryBoolean | list[dict[str, Any]]:
        """An ASK's answer, or a SELECT's rows (variable -> term) for this module's own queries."""
        response = self._send("query", self.query_url, data={"query": sparql}, headers={"Accept": RESULTS_JSON})
        result = boolean_if_ask(solutions(response.content, QueryResultsFormat.JSON))
        if isinstance(result, QuerySolutions):
            names = [variable.value for variable in result.variables]
            return [{name: row[name] for name in names if row[name] is not None} for row in result]
        return result

    def _graph(self, graph: Graph) -> list[Triple]:
        graph = self.default_graph if graph is None else graph
        where = "?s ?p ?o" if graph is None else f"GRAPH {iri_ref(graph)} {{ ?s ?p ?o }}"
        query = f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ {where} }}"
        response = self._send("query", self.query_url, data={"query": query}, headers={"Accept": NTRIPLES})
        triples = [quad.triple for quad in parse(response.content, format=RdfFormat.N_TRIPLES)]
        return triples if self.triple_terms else as_rdf12(triples)

    def _write(self, quads: list[Quad], graph: Graph | Literal["all"], *, replace: bool) -> None:
        """The Graph Store Protocol's PUT (replace) or POST in one request where there is one;
        else CLEAR and INSERT DATA, in updates of about WRITE_BATCH quads (so on such a store a
        large write is not atomic: a failure midway leaves the batches before it)."""
        if not self.triple_terms:
            quads = list(as_rdf11(quads))
        if self.default_graph:
            graph = self.default_graph if graph is None else graph
            quads = in_default(quads, NamedNode(self.default_graph))
        if self.gsp_url is not None:
            params = {} if graph == "all" else {"default": ""} if graph is None else {"graph": graph}
            body = (
                serialize(
                    quads if graph == "all" else [q.triple for q in quads],
                    format=RdfFormat.N_QUADS if graph == "all" else RdfFormat.N_TRIPLES,
                )
                or b""
            )
            headers = {"Content-Type": NQUADS if graph == "all" else NTRIPLES}
            self._send(
                "write", self.gsp_url, method="PUT" if replace else "POST", params=params, content=body, headers=headers
            )
            return
        target = "ALL" if graph == "all" else "DEFAULT" if graph is None else f"GRAPH {iri_ref(graph)}"
        for index, batch in enumerate(batches(quads, WRITE_BATCH)):
            operations = [f"CLEAR SILENT {target}"] if replace and index == 0 else []
            operations += [insert(batch)] if batch else []
            if operations:
                self.update(" ;\n".join(operations))

    def _send(
        self,
        what: Literal["query", "update", "write"],
        url: str,
        *,
        method: str = "POST",
        timeout: float | None = None,
        max_bytes: int | None = None,
        checked: bool = True,
        **request: Any,
    ) -> httpx.Response:
        """The store's answer, read whole within `timeout` seconds in all (default: the
        store's) and `max_bytes` (default: the store's cap); an error status raised as ours
        unless not `checked`."""
        answer = self._exchange(what, url, method, timeout, max_bytes, request, None)
        assert isinstance(answer, httpx.Response)
        return self._checked(answer, what) if checked else answer

    def _send_streamed(
        self,
        form: dict[str, str | list[str]],
        accepted: str,
        timeout: float | None,
        max_bytes: int | None,
        written: Callable[[httpx.Response, int], QueryResult],
    ) -> QueryResult:
        """A query whose answer `written` reads as it arrives, held to `_send`'s deadline and cap
        and failing with its errors."""
        request = {"data": form, "headers": {"Accept": accepted}}
        answer = self._exchange("query", self.query_url, "POST", timeout, max_bytes, request, written)
        if isinstance(answer, httpx.Response):  # an error status, read: raised as ours
            self._checked(answer, "query")
            raise AssertionError("unreachable: only an error status comes back unread")
        return answer

    def _exchange(
        self,
        what: Literal["query", "update", "write"],
        url: str,
        method: str,
        timeout: float | None,
        max_bytes: int | None,
        request: dict[str, Any],
        consume: Callable[[httpx.Response, int], QueryResult] | None,
    ) -> httpx.Response | QueryResult:
        """One exchange within the deadline and cap, a read tried again if it could not connect:
        the answer read whole, or (with `consume`, and a success status) what `consume` makes of
        it as it arrives."""
        attempts = READ_ATTEMPTS if what == "query" else 1
        limit = timeout if timeout is not None else self.timeout
        cap = min(max_bytes, self.max_response_bytes) if max_bytes is not None else self.max_response_bytes
        with deadline(limit) as cancel:
            for attempt in range(1, attempts + 1):
                try:
                    response = self._request(method, url, limit, cap, cancel, request, consume)
                except httpx.ConnectError as error:
                    if attempt < attempts:
                        time.sleep(0.2 * attempt)
                        continue
                    raise RemoteStoreFailed(f"cannot reach the store at {self.name}") from error
                except httpx.TimeoutException as error:
                    if what == "query":
                        raise QueryTimeout(
                            f"the query ran past the {limit:g} s limit (store at {self.name})"
                        ) from error
                    raise RemoteStoreFailed(
                        f"the store at {self.name} did not answer the {what} within {limit:g} s; it may have applied it"
                    ) from error
                except AnswerTooLarge:
                    if what == "query" and max_bytes is not None and cap == max_bytes:
                        raise ResultTooLarge(result_too_large(cap)) from None
                    raise RemoteStoreFailed(
                        f"the store at {self.name} answered the {what} with more than {cap} bytes, "
                        "over the limit (store_max_response_bytes)"
                    ) from None
                except httpx.HTTPError as error:
                    raise RemoteStoreFailed(f"the connection to the store at {self.name} failed") from error
                return response
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _request(
        self,
        method: str,
        url: str,
        limit: float,
        cap: int,
        cancel: Cancel | None,
        request: dict[str, Any],
        consume: Callable[[httpx.Response, int], QueryResult] | None,
    ) -> httpx.Response | QueryResult:
        """One request, its answer read whole (at most `cap` bytes; an error's, 4 KiB) or, on
        success, by `consume`; ClientGone when it failed because the client it serves hung up
        (`cancel`)."""
        try:
            with self._client.stream(method, url, timeout=limit, **request) as streamed:
                if consume is not None and streamed.status_code < 300:
                    return consume(streamed, cap)
                body = read_capped(streamed, cap if streamed.status_code < 300 else 4096)
                return httpx.Response(streamed.status_code, headers=streamed.headers, content=body)
        except httpx.HTTPError as error:
            if cancel is not None and cancel.is_set:
                raise ClientGone(f"the client hung up; its request to the store at {self.name} was stopped") from error
            raise

    def _checked(self, response: httpx.Response, what: str) -> httpx.Response:
        status = response.status_code
        if status < 300:
            return response
        # for the operator only (a client's own syntax errors are routine): the store's words never reach a client
        level = logging.INFO if status < 500 else logging.WARNING
        logger.log(level, "the store at %s answered %s to a %s: %.500s", self.name, status, what, response.text)
        if status == 400:
            raise QuerySyntaxError(f"the store at {self.name} refused the {what} as malformed (HTTP 400)")
        if status in (401, 403):
            raise RemoteStoreFailed(f"the store at {self.name} refused our credentials (HTTP {status})")
        raise RemoteStoreFailed(f"the store at {self.name} failed the {what} (HTTP {status})")
