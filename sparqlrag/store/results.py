"""A query's answer written in the format the client's Accept header prefers for its kind:
one negotiation for every store."""

from __future__ import annotations

from typing import Literal, Protocol, TypeVar

from pyoxigraph import QueryBoolean, QuerySolutions, RdfFormat

from sparqlrag.store.base import NotAcceptable, QueryResult
from sparqlrag.store.formats import GRAPH_FORMATS, RESULTS_FORMATS, negotiate, with_charset

F = TypeVar("F")


class Triples(Protocol):
    """A CONSTRUCT or DESCRIBE answer: pyoxigraph's QueryTriples, or triples read back from a remote store."""

    def serialize(self, output: None = None, format: RdfFormat | None = None) -> bytes | None: ...


def serialize_result(result: QueryBoolean | QuerySolutions | Triples, accept: str | None) -> QueryResult:
    if isinstance(result, (QueryBoolean, QuerySolutions)):
        kind: Literal["boolean", "solutions"] = "boolean" if isinstance(result, QueryBoolean) else "solutions"
        media_type, results_format = _chosen(accept, RESULTS_FORMATS, "SPARQL results format")
        return QueryResult(kind, with_charset(media_type), result.serialize(format=results_format) or b"")
    media_type, rdf_format = _chosen(accept, GRAPH_FORMATS, "RDF format for this CONSTRUCT/DESCRIBE result")
    try:
        body = result.serialize(format=rdf_format) or b""
    except OSError as error:
        raise NotAcceptable(f"cannot write this result as {rdf_format.name}: {error}") from error
    return QueryResult("graph", with_charset(media_type), body)


def _chosen(accept: str | None, offers: list[tuple[str, F]], what: str) -> tuple[str, F]:
    chosen = negotiate(accept, offers)
    if chosen is None:
        raise NotAcceptable(
            f"Accept: {accept} allows no {what}; ask for one of " + ", ".join(sorted({m for m, _ in offers}))
        )
    return chosen
