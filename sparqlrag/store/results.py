"""A query's answer written in the format the client's Accept header prefers for its kind:
one negotiation for every store."""

from __future__ import annotations

from typing import Literal, Protocol

from pyoxigraph import QueryBoolean, QuerySolutions, RdfFormat

from sparqlrag.store.base import NotAcceptable, QueryResult
from sparqlrag.store.formats import GRAPH_FORMATS, RESULTS_FORMATS, negotiate, with_charset


class Triples(Protocol):
    """A CONSTRUCT or DESCRIBE answer: pyoxigraph's QueryTriples, or triples read back from a remote store."""

    def serialize(self, output: None = None, format: RdfFormat | None = None) -> bytes | None: ...


def serialize_result(result: QueryBoolean | QuerySolutions | Triples, accept: str | None) -> QueryResult:
    if isinstance(result, (QueryBoolean, QuerySolutions)):
        kind: Literal["boolean", "solutions"] = "boolean" if isinstance(result, QueryBoolean) else "solutions"
        chosen = negotiate(accept, RESULTS_FORMATS)
        if chosen is None:
            raise NotAcceptable(
                f"Accept: {accept} allows no SPARQL results format; ask for one of "
                + ", ".join(sorted({m for m, _ in RESULTS_FORMATS}))
            )
        media_type, results_format = chosen
        body = result.serialize(format=results_format) or b""
        return QueryResult(kind, with_charset(media_type), body)
    chosen_graph = negotiate(accept, GRAPH_FORMATS)
    if chosen_graph is None:
        raise NotAcceptable(
            f"Accept: {accept} allows no RDF format for this CONSTRUCT/DESCRIBE result; ask for one of "
            + ", ".join(sorted({m for m, _ in GRAPH_FORMATS}))
        )
    media_type, rdf_format = chosen_graph
    try:
        body = result.serialize(format=rdf_format) or b""
    except OSError as error:
        raise NotAcceptable(f"cannot write this result as {rdf_format.name}: {error}") from error
    return QueryResult("graph", with_charset(media_type), body)
