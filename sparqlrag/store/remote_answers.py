"""A remote store's answer to a query, read back and written again in the format the client
asked for: whole, or (for a client's query) as it arrives, never whole in memory."""

from __future__ import annotations

import io

import httpx
from pyoxigraph import QueryBoolean, QueryResultsFormat, QuerySolutions, RdfFormat, parse

from sparqlrag.store.base import QueryResult, RemoteStoreFailed
from sparqlrag.store.deadlines import CappedBody
from sparqlrag.store.formats import media_type_of
from sparqlrag.store.remote_data import boolean_if_ask, solutions, streamed_solutions
from sparqlrag.store.results import Emit, ReadTriples, serialize_result

RESULTS_JSON = "application/sparql-results+json"
NTRIPLES, NQUADS = "application/n-triples", "application/n-quads"
READERS: dict[str, QueryResultsFormat | RdfFormat] = {
    RESULTS_JSON: QueryResultsFormat.JSON,
    "application/sparql-results+xml": QueryResultsFormat.XML,
    "text/tab-separated-values": QueryResultsFormat.TSV,
    NTRIPLES: RdfFormat.N_TRIPLES,
    "text/turtle": RdfFormat.TURTLE,
    "application/rdf+xml": RdfFormat.RDF_XML,
}


def _format_of(response: httpx.Response, store: str) -> tuple[str, QueryResultsFormat | RdfFormat]:
    media_type = media_type_of(response.headers.get("content-type"))
    reader = READERS.get(media_type)
    if reader is None:
        raise RemoteStoreFailed(f"the store at {store} answered in {media_type or 'no media type'}")
    return media_type, reader


def _unparsable(store: str, media_type: str) -> RemoteStoreFailed:
    return RemoteStoreFailed(f"the store at {store} sent a {media_type} answer that does not parse")


def whole_answer(
    response: httpx.Response, *, store: str, accept: str | None, max_bytes: int | None, distinct: bool = False
) -> QueryResult:
    """The store's answer, read whole, in the format `accept` prefers; `distinct`: a graph
    answer's triples each once (a DESCRIBE's)."""
    media_type, reader = _format_of(response, store)
    try:
        if isinstance(reader, QueryResultsFormat):
            return serialize_result(boolean_if_ask(solutions(response.content, reader)), accept, max_bytes)
        triples = [quad.triple for quad in parse(response.content, format=reader)]
    except SyntaxError as error:
        raise _unparsable(store, media_type) from error
    return serialize_result(ReadTriples(triples, distinct=distinct), accept, max_bytes)


def streamed_answer(
    response: httpx.Response,
    cap: int,
    *,
    store: str,
    accept: str | None,
    max_bytes: int | None,
    emit: Emit,
    distinct: bool = False,
) -> QueryResult:
    """The store's answer, parsed as it arrives (at most `cap` bytes) and written again in
    pieces to `emit`; what is returned holds the last piece. `distinct` as in whole_answer."""
    media_type, reader = _format_of(response, store)
    body = io.BufferedReader(CappedBody(response, cap))
    read: QueryBoolean | QuerySolutions | ReadTriples | None = None
    try:
        if isinstance(reader, QueryResultsFormat):
            read = boolean_if_ask(streamed_solutions(body, reader))
        else:
            read = ReadTriples((quad.triple for quad in parse(body, format=reader)), distinct=distinct)
        return serialize_result(read, accept, max_bytes, emit)
    except Exception as error:  # pyoxigraph's readers must be dropped on this thread: no frame may keep them
        error.__traceback__ = None
        failure = _unparsable(store, media_type) if isinstance(error, SyntaxError) else error
    finally:
        del read
    raise failure
