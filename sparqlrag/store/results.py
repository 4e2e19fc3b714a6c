"""A query's answer written in the format the client's Accept header prefers for its kind:
one negotiation for every store."""

from __future__ import annotations

from typing import IO, Literal, Protocol, TypeVar, cast

from pyoxigraph import QueryBoolean, QuerySolutions, RdfFormat

from sparqlrag.store.base import NotAcceptable, QueryResult, ResultTooLarge
from sparqlrag.store.formats import GRAPH_FORMATS, RESULTS_FORMATS, negotiate, with_charset

F = TypeVar("F")


class Triples(Protocol):
    """A CONSTRUCT or DESCRIBE answer: pyoxigraph's QueryTriples, or triples read back from a remote store."""

    def serialize(self, output: IO[bytes] | None = None, format: RdfFormat | None = None) -> bytes | None: ...


def result_too_large(limit: int) -> str:
    return (
        f"the query's result is over the {limit:,} byte limit (max_result_bytes): add LIMIT, ask for fewer "
        "variables, or page through it with LIMIT and OFFSET"
    )


class _Capped:
    """A file pyoxigraph writes a result into, which refuses to grow past `limit` bytes (it
    writes in pieces, so an oversized result stops at the limit, not when it is whole)."""

    def __init__(self, limit: int | None) -> None:
        self.limit, self.size, self.parts = limit, 0, list[bytes]()

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.limit is not None and self.size > self.limit:
            raise ResultTooLarge(result_too_large(self.limit))
        self.parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def value(self) -> bytes:
        return b"".join(self.parts)


def serialize_result(
    result: QueryBoolean | QuerySolutions | Triples, accept: str | None, max_bytes: int | None = None
) -> QueryResult:
    """The result in the format `accept` prefers; ResultTooLarge once it passes `max_bytes`."""
    written = _Capped(max_bytes)
    if isinstance(result, (QueryBoolean, QuerySolutions)):
        kind: Literal["boolean", "solutions"] = "boolean" if isinstance(result, QueryBoolean) else "solutions"
        media_type, results_format = _chosen(accept, RESULTS_FORMATS, "SPARQL results format")
        result.serialize(output=cast(IO[bytes], written), format=results_format)
        return QueryResult(kind, with_charset(media_type), written.value())
    media_type, rdf_format = _chosen(accept, GRAPH_FORMATS, "RDF format for this CONSTRUCT/DESCRIBE result")
    try:
        result.serialize(output=cast(IO[bytes], written), format=rdf_format)
    except OSError as error:
        raise NotAcceptable(f"cannot write this result as {rdf_format.name}: {error}") from error
    return QueryResult("graph", with_charset(media_type), written.value())


def _chosen(accept: str | None, offers: list[tuple[str, F]], what: str) -> tuple[str, F]:
    chosen = negotiate(accept, offers)
    if chosen is None:
        raise NotAcceptable(
            f"Accept: {accept} allows no {what}; ask for one of " + ", ".join(sorted({m for m, _ in offers}))
        )
    return chosen
