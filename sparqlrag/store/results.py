"""A query's answer written in the format the client's Accept header prefers for its kind:
one negotiation for every store."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import IO, Literal, Protocol, TypeVar, cast

from pyoxigraph import QueryBoolean, QuerySolutions, RdfFormat, Triple, serialize

from sparqlrag.store.base import NotAcceptable, QueryResult, ResultTooLarge
from sparqlrag.store.formats import GRAPH_FORMATS, RESULTS_FORMATS, negotiate, with_charset

F = TypeVar("F")


class Triples(Protocol):
    """A CONSTRUCT or DESCRIBE answer: pyoxigraph's QueryTriples, or triples read back from a remote store."""

    def serialize(self, output: IO[bytes] | None = None, format: RdfFormat | None = None) -> bytes | None: ...


class ReadTriples:
    """A CONSTRUCT or DESCRIBE answer as triples (read back from a remote store, or a query's),
    to be written as the client asks; `distinct`: each triple once. A DESCRIBE over a union
    default graph gives a triple once per graph that states it (pyoxigraph, and stores built
    like it), and an RDF graph is a set. A CONSTRUCT is one already, its pattern matched
    against the union; remembering every triple of it would cost half again the time and a set
    as big as the answer."""

    def __init__(self, triples: Iterable[Triple], *, distinct: bool = False) -> None:
        self.triples, self.distinct = triples, distinct

    def serialize(self, output: IO[bytes] | None = None, format: RdfFormat | None = None) -> bytes | None:
        triples = _once(self.triples) if self.distinct else self.triples
        return serialize(triples, output, format=format or RdfFormat.N_TRIPLES)


def _once(triples: Iterable[Triple]) -> Iterator[Triple]:
    seen: set[Triple] = set()
    for triple in triples:
        if triple not in seen:
            seen.add(triple)
            yield triple


def result_too_large(limit: int) -> str:
    return (
        f"the query's result is over the {limit:,} byte limit (max_result_bytes): add LIMIT, ask for fewer "
        "variables, or page through it with LIMIT and OFFSET"
    )


FIRST_PIECE_BYTES = 1 << 20  # a result this small is answered whole (and an error in it is a clean 4xx)
CHUNK_BYTES = 64 * 1024  # past the first piece, a streamed result leaves in pieces of about this size
Emit = Callable[[QueryResult], None]  # takes each piece of a streamed result as it is written


class CappedWriter:
    """A file pyoxigraph writes a result into, which refuses to grow past `limit` bytes (it
    writes in pieces, so an oversized result stops at the limit, not when it is whole). With
    `emit`, the first FIRST_PIECE_BYTES written, then every CHUNK_BYTES, leave at once, so the
    result is never whole in memory."""

    def __init__(self, limit: int | None, head: QueryResult, emit: Emit | None) -> None:
        self.limit, self.head, self.emit = limit, head, emit
        self.size, self.held, self.parts, self.piece = 0, 0, list[bytes](), FIRST_PIECE_BYTES

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.limit is not None and self.size > self.limit:
            raise ResultTooLarge(result_too_large(self.limit))
        self.parts.append(bytes(data))
        self.held += len(data)
        if self.emit is not None and self.held >= self.piece:
            self.emit(replace(self.head, body=self.value()))
            self.parts, self.held, self.piece = [], 0, CHUNK_BYTES
        return len(data)

    def flush(self) -> None:
        pass

    def value(self) -> bytes:
        """What was written and not emitted."""
        return b"".join(self.parts)


def serialize_result(
    result: QueryBoolean | QuerySolutions | Triples,
    accept: str | None,
    max_bytes: int | None = None,
    emit: Emit | None = None,
) -> QueryResult:
    """The result in the format `accept` prefers; ResultTooLarge once it passes `max_bytes`.
    With `emit`, the result is handed to it in pieces as it is written (each a QueryResult of
    the same kind and media type), and what is returned holds only the last piece."""
    if isinstance(result, (QueryBoolean, QuerySolutions)):
        kind: Literal["boolean", "solutions"] = "boolean" if isinstance(result, QueryBoolean) else "solutions"
        media_type, results_format = _chosen(accept, RESULTS_FORMATS, "SPARQL results format")
        written = CappedWriter(max_bytes, QueryResult(kind, with_charset(media_type), b""), emit)
        result.serialize(output=cast(IO[bytes], written), format=results_format)
        return replace(written.head, body=written.value())
    media_type, rdf_format = _chosen(accept, GRAPH_FORMATS, "RDF format for this CONSTRUCT/DESCRIBE result")
    written = CappedWriter(max_bytes, QueryResult("graph", with_charset(media_type), b""), emit)
    try:
        result.serialize(output=cast(IO[bytes], written), format=rdf_format)
    except OSError as error:
        raise NotAcceptable(f"cannot write this result as {rdf_format.name}: {error}") from error
    return replace(written.head, body=written.value())


def _chosen(accept: str | None, offers: list[tuple[str, F]], what: str) -> tuple[str, F]:
    chosen = negotiate(accept, offers)
    if chosen is None:
        raise NotAcceptable(
            f"Accept: {accept} allows no {what}; ask for one of " + ", ".join(sorted({m for m, _ in offers}))
        )
    return chosen
