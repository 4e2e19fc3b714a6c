"""RDF 1.2 triple terms written as RDF 1.1 reification, for the tools a team opens a dump with
that cannot read `<<( s p o )>>` (rdflib, many triple stores).

A reifier (`r rdf:reifies <<( s p o )>>`) keeps its IRI and states `r rdf:subject s ;
rdf:predicate p ; rdf:object o` instead, so every query that joins on the reifier (its chunks,
rule, score) still finds it. A triple term anywhere else (a trace's seed names the fact it came
from) becomes a blank node stating the same three triples, one per distinct term and graph.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from pyoxigraph import BlankNode, DefaultGraph, NamedNode, Quad, RdfFormat, Triple, parse, serialize

from sparqlrag.store import vocab

GraphName = NamedNode | BlankNode | DefaultGraph


def rewrite_as_rdf11(nquads: Path, output: Path | BinaryIO, format: RdfFormat) -> None:
    """An N-Quads dump written again in `format` with RDF 1.1 reification, streaming (a triple
    format gets the triples: a graph's dump)."""
    quads = as_rdf11(parse(path=str(nquads), format=RdfFormat.N_QUADS))
    statements = quads if format.supports_datasets else (quad.triple for quad in quads)
    serialize(statements, output=str(output) if isinstance(output, Path) else output, format=format)


def as_rdf11(quads: Iterable[Quad]) -> Iterator[Quad]:
    """The quads with every triple term replaced by RDF 1.1 reification, in one pass."""
    stated: set[tuple[str, str]] = set()  # (node, graph) whose three triples were written
    for quad in quads:
        extra: list[Quad] = []
        if quad.predicate == vocab.RDF_REIFIES and isinstance(quad.object, Triple):
            extra += _statement(quad.subject, quad.object, quad.graph_name, stated)
            yield from extra
            continue
        subject = _node(quad.subject, quad.graph_name, stated, extra)
        obj = _node(quad.object, quad.graph_name, stated, extra)
        yield Quad(subject, quad.predicate, obj, quad.graph_name)  # type: ignore[arg-type]
        yield from extra


def _node(term: object, graph: GraphName, stated: set[tuple[str, str]], extra: list[Quad]) -> object:
    if not isinstance(term, Triple):
        return term
    node = BlankNode("t" + hashlib.sha1(str(term).encode("utf-8")).hexdigest()[:24])
    extra += _statement(node, term, graph, stated)
    return node


def _statement(node: object, triple: Triple, graph: GraphName, stated: set[tuple[str, str]]) -> list[Quad]:
    key = (str(node), str(graph))
    if key in stated:
        return []
    stated.add(key)
    extra: list[Quad] = []
    subject = _node(triple.subject, graph, stated, extra)
    obj = _node(triple.object, graph, stated, extra)
    return [
        Quad(node, vocab.RDF_TYPE, vocab.RDF_STATEMENT, graph),  # type: ignore[arg-type]
        Quad(node, vocab.RDF_SUBJECT, subject, graph),  # type: ignore[arg-type]
        Quad(node, vocab.RDF_PREDICATE, triple.predicate, graph),  # type: ignore[arg-type]
        Quad(node, vocab.RDF_OBJECT, obj, graph),  # type: ignore[arg-type]
        *extra,
    ]
