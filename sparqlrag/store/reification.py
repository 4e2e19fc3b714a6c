"""RDF 1.2 triple terms written as RDF 1.1 reification, for the tools a team opens a dump with
and the stores that cannot read `<<( s p o )>>` (rdflib, Virtuoso), and read back.

A reifier (`r rdf:reifies <<( s p o )>>`) keeps its IRI and states `r rdf:subject s ;
rdf:predicate p ; rdf:object o` instead, so every query that joins on the reifier (its chunks,
rule, score) still finds it. A triple term anywhere else (a trace's seed names the fact it came
from) becomes a blank node stating the same three triples, one per distinct term and graph.

The same mapping applies to SPARQL text (`sparql_as_rdf11`), so that the queries and updates
this server writes in RDF 1.2 run unchanged on a store of RDF 1.1; `as_rdf12` maps what such a
store holds back to triple terms, so dumps and knowledge cores look the same whatever the store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from pyoxigraph import BlankNode, DefaultGraph, NamedNode, Quad, RdfFormat, Triple, parse, serialize

from sparqlrag.store import vocab
from sparqlrag.store.sparql_text import Token, tokens

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
        Quad(node, vocab.RDF_SUBJECT, subject, graph),  # type: ignore[arg-type]
        Quad(node, vocab.RDF_PREDICATE, triple.predicate, graph),  # type: ignore[arg-type]
        Quad(node, vocab.RDF_OBJECT, obj, graph),  # type: ignore[arg-type]
        *extra,
    ]


_STATING = (vocab.RDF_SUBJECT, vocab.RDF_PREDICATE, vocab.RDF_OBJECT)


def as_rdf12(triples: list[Triple]) -> list[Triple]:
    """One graph's triples with RDF 1.1 reification read back as triple terms: a node stating
    one subject, predicate and object reifies that triple (`rdf:reifies`); a blank one with
    nothing else to say, named as an object, is the triple term itself (as `as_rdf11` wrote)."""
    stated: dict[object, dict[object, list[object]]] = {}
    for t in triples:
        if t.predicate in _STATING:
            stated.setdefault(t.subject, {}).setdefault(t.predicate, []).append(t.object)
    parts = {
        node: (found[vocab.RDF_SUBJECT][0], found[vocab.RDF_PREDICATE][0], found[vocab.RDF_OBJECT][0])
        for node, found in stated.items()
        if all(len(found.get(p, ())) == 1 for p in _STATING)
    }

    def stating(t: Triple) -> bool:
        return t.subject in parts and (
            t.predicate in _STATING or (t.predicate == vocab.RDF_TYPE and t.object == vocab.RDF_STATEMENT)
        )

    saying_more = {t.subject for t in triples if not stating(t)}
    named = {t.object for t in triples if not stating(t) or t.predicate != vocab.RDF_PREDICATE}
    inline = {n for n in parts if isinstance(n, BlankNode) and n not in saying_more and n in named}

    def term(node: object, within: frozenset[object] = frozenset()) -> object:
        if node not in inline or node in within:
            return node
        s, p, o = parts[node]
        return Triple(term(s, within | {node}), p, term(o, within | {node}))  # type: ignore[arg-type]

    kept = [Triple(t.subject, t.predicate, term(t.object)) for t in triples if not stating(t)]  # type: ignore[arg-type]
    reifiers = [n for n in parts if n not in inline]
    return kept + [
        Triple(n, vocab.RDF_REIFIES, Triple(term(parts[n][0]), parts[n][1], term(parts[n][2])))  # type: ignore[arg-type]
        for n in reifiers
    ]


def sparql_as_rdf11(sparql: str) -> str:
    """A query or update with its triple terms written as RDF 1.1 reification:
    `?r rdf:reifies <<( s p o )>>` states `?r rdf:subject s ; rdf:predicate p ; rdf:object o`, any
    other `<<( s p o )>>` is the blank node `[ rdf:subject s ; ... ]`. Only text a store without
    triple terms could not parse changes; a triple term in an expression becomes text it still
    refuses."""
    if "<<(" not in sparql:
        return sparql
    found, pieces, cursor, index = tokens(sparql), [], 0, 0
    while index < len(found):
        term = _triple_term(sparql, found, index) if _at(found, index, "<<(") else None
        if term is None:
            index += 1
            continue
        (s, p, o), after = term
        reifies = index > 0 and found[index - 1].text in ("rdf:reifies", f"<{vocab.RDF}reifies>")
        start = found[index - 1].start if reifies else found[index].start
        stating = f"<{vocab.RDF}subject> {s} ; <{vocab.RDF}predicate> {p} ; <{vocab.RDF}object> {o}"
        pieces += [sparql[cursor:start], stating if reifies else f"[ {stating} ]"]
        cursor, index = found[after - 1].end, after
    return "".join(pieces) + sparql[cursor:]


def _at(found: list[Token], index: int, text: str) -> bool:
    """Whether the tokens from `index` spell `text` with nothing between them."""
    run = found[index : index + len(text)]
    return (
        len(run) == len(text)
        and "".join(t.text for t in run) == text
        and all(a.end == b.start for a, b in zip(run, run[1:], strict=False))
    )


def _triple_term(text: str, found: list[Token], index: int) -> tuple[tuple[str, str, str], int] | None:
    """The three terms of the `<<( s p o )>>` at `index`, each as RDF 1.1 text, and the index past it."""
    index += 3
    terms: list[str] = []
    for _ in range(3):
        term = _term(text, found, index)
        if term is None:
            return None
        written, index = term
        terms.append(written)
    if not _at(found, index, ")>>"):
        return None
    return (terms[0], terms[1], terms[2]), index + 3


def _term(text: str, found: list[Token], index: int) -> tuple[str, int] | None:
    if index >= len(found):
        return None
    if _at(found, index, "<<("):
        nested = _triple_term(text, found, index)
        if nested is None:
            return None
        (s, p, o), after = nested
        return f"[ <{vocab.RDF}subject> {s} ; <{vocab.RDF}predicate> {p} ; <{vocab.RDF}object> {o} ]", after
    first = found[index]
    if first.kind in ("var", "iri", "pname", "word"):
        return first.text, index + 1
    if first.kind not in ("string", "number", "other") or (first.kind == "other" and first.text not in "+-."):
        return None
    # a literal: a string with its language or datatype, or a number; its tokens touch
    last = index
    while last + 1 < len(found) and found[last + 1].start == found[last].end and found[last + 1].text not in ")>":
        last += 1
    return text[first.start : found[last].end], last + 1
