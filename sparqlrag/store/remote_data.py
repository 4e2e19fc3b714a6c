"""What a remote store is sent and what it answers, as data: INSERT DATA batches that keep each
blank node within one update, files parsed into quads, and query results read back, with the
forms some stores give them (Virtuoso's blank node labels and its ASK as a row) made standard."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO

from pyoxigraph import (
    BlankNode,
    DefaultGraph,
    NamedNode,
    Quad,
    QueryBoolean,
    QueryResultsFormat,
    QuerySolutions,
    RdfFormat,
    parse,
    parse_query_results,
)

from sparqlrag.store.base import DataSyntaxError, Graph
from sparqlrag.store.sparql_text import insert_data

ASK_AS_ROW = "__ASK_RETVAL"  # Virtuoso 7.2 answers ASK with one row of this variable (1 or none)


def solutions(content: bytes, format: QueryResultsFormat) -> QueryBoolean | QuerySolutions:
    """Query results read, with blank node labels that are not valid ones (Virtuoso's
    `nodeID://b1`, in JSON) made valid: a label is only a name within one answer."""
    if format == QueryResultsFormat.JSON and b"nodeID://" in content:
        answer = json.loads(content)
        for row in answer.get("results", {}).get("bindings", []):
            for value in row.values():
                if value.get("type") == "bnode":
                    value["value"] = re.sub(r"\W", "_", value["value"])
        content = json.dumps(answer).encode()
    return parse_query_results(content, format)


# a blank node's value in JSON results, as Virtuoso writes it (type before value)
_VIRTUOSO_BNODE = re.compile(rb'("type"\s{0,8}:\s{0,8}"bnode"\s{0,8},\s{0,8}"value"\s{0,8}:\s{0,8}")nodeID://')
_HELD_BACK = 64  # bytes kept until the next piece: longer than any match of _VIRTUOSO_BNODE


class _BnodeLabels(io.RawIOBase):
    """JSON results as they arrive, Virtuoso's blank node labels (`nodeID://b1`) made valid the
    way `solutions` makes them (`nodeID___b1`); a match across two pieces is found, since the
    end of each piece waits for the next."""

    def __init__(self, source: IO[bytes]) -> None:
        self._source, self._ready, self._tail = source, b"", b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._ready:
            piece = self._source.read(1 << 16)
            if not piece:
                self._ready, self._tail = self._tail, b""
                if not self._ready:
                    return 0
                break
            text = _VIRTUOSO_BNODE.sub(rb"\1nodeID___", self._tail + piece)
            self._ready, self._tail = text[:-_HELD_BACK], text[-_HELD_BACK:]
        taken = min(len(buffer), len(self._ready))
        buffer[:taken] = self._ready[:taken]
        self._ready = self._ready[taken:]
        return taken


def streamed_solutions(body: IO[bytes], format: QueryResultsFormat) -> QueryBoolean | QuerySolutions:
    """Query results read as they arrive (`solutions`, for an answer never whole in memory)."""
    if format == QueryResultsFormat.JSON:
        body = io.BufferedReader(_BnodeLabels(body))
    return parse_query_results(body, format)


def boolean_if_ask(result: QueryBoolean | QuerySolutions) -> QueryBoolean | QuerySolutions:
    """An ASK's answer as a boolean, also from a store that sends it as a row (ASK_AS_ROW)."""
    if not isinstance(result, QuerySolutions) or [v.value for v in result.variables] != [ASK_AS_ROW]:
        return result
    truth = any(row[ASK_AS_ROW] is not None and row[ASK_AS_ROW].value != "0" for row in result)
    answer = b'{"head": {}, "boolean": %s}' % (b"true" if truth else b"false")
    return parse_query_results(answer, QueryResultsFormat.JSON)


def insert(quads: list[Quad]) -> str:
    """INSERT DATA, or where there are blank nodes (which some stores, Virtuoso among them,
    refuse in data) the same quads as the template of an `INSERT ... WHERE {}`."""
    text = insert_data(quads)
    if not any(isinstance(t, BlankNode) for q in quads for t in (q.subject, q.object)):
        return text
    return "INSERT" + text.removeprefix("INSERT DATA") + " WHERE {}"


def batches(quads: list[Quad], size: int) -> Iterator[list[Quad]]:
    """`quads` in runs of about `size` (at least one, maybe empty), the quads sharing a blank
    node in one run: a blank node's label holds only within one update."""
    if len(quads) <= size:
        yield quads
        return
    parent: dict[BlankNode, BlankNode] = {}

    def root(node: BlankNode) -> BlankNode:
        while parent.setdefault(node, node) != node:
            node = parent[node]
        return node

    blanks = [[t for t in (q.subject, q.object, q.graph_name) if isinstance(t, BlankNode)] for q in quads]
    for found in blanks:
        for other in found[1:]:
            parent[root(other)] = root(found[0])
    batch: list[Quad] = []
    linked: dict[BlankNode, list[Quad]] = {}
    for quad, found in zip(quads, blanks, strict=True):
        if found:
            linked.setdefault(root(found[0]), []).append(quad)
            continue
        batch.append(quad)
        if len(batch) >= size:
            yield batch
            batch = []
    for group in linked.values():
        batch += group
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def parsed(source: Path | BinaryIO | bytes, format: RdfFormat, base_iri: str | None) -> list[Quad]:
    try:
        if isinstance(source, Path):
            return list(parse(path=str(source), format=format, base_iri=base_iri))
        data = source if isinstance(source, bytes) else source.read()
        return list(parse(data, format=format, base_iri=base_iri))
    except SyntaxError as error:
        raise DataSyntaxError(f"invalid {format.name} data: {error}") from error


def in_default(quads: list[Quad], graph: NamedNode) -> list[Quad]:
    """The default graph's quads moved into `graph`."""
    return [
        Quad(q.subject, q.predicate, q.object, graph) if isinstance(q.graph_name, DefaultGraph) else q for q in quads
    ]


def in_graph(quads: Iterable[Quad], graph: Graph) -> list[Quad]:
    target = DefaultGraph() if graph is None else NamedNode(graph)
    return [Quad(q.subject, q.predicate, q.object, target) for q in quads]
