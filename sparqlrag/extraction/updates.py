"""The SPARQL updates that change a document: pure text builders, one transaction's parts.

The pipeline joins what one document's change needs (removal, placement, record, and the
new quads) into one update request (pipeline.Pipeline._update)."""

from __future__ import annotations

from datetime import datetime

from pyoxigraph import Literal, NamedNode

from sparqlrag.extraction.provenance import ChunkRecord, DocumentRecord, document_quads, placement_quads
from sparqlrag.extraction.resolution import JOINT_RULES
from sparqlrag.store import vocab
from sparqlrag.store.sparql_text import insert_data, slices, sparql_term, values
from sparqlrag.store.vocab import Iris


def removal(iris: Iris, chunks: list[str], statements: list[str]) -> str:
    """Drop the chunks' derivations, and all of those of a merge that needs all its evidence
    (JOINT_RULES); then statements left with none take their fact along. One request, its
    VALUES in runs of VALUES_BATCH (a big document's statements would pass a store's limit)."""
    if not chunks:
        return ""
    src, kg = sparql_term(iris.source_graph), sparql_term(iris.knowledge_graph)
    ops = []
    for some in slices(chunks):
        chunk_values = values("chunk", map(NamedNode, some))
        ops += [
            f"DELETE {{ GRAPH {src} {{ ?st prov:wasDerivedFrom ?chunk }} }} WHERE {{ {chunk_values} GRAPH {src} {{ "
            f"?st prov:wasDerivedFrom ?chunk }} }}",
            f"DELETE {{ GRAPH {src} {{ ?chunk ?p ?o . ?activity ?q ?r }} }} WHERE {{ {chunk_values} GRAPH {src} {{ "
            f"{{ ?chunk ?p ?o }} UNION {{ ?activity prov:used ?chunk ; ?q ?r }} }} }}",
        ]
    for some in slices(statements):  # (a fact a person's decision also reifies stays: curation.py)
        ops.append(
            f"DELETE {{ GRAPH {src} {{ ?st prov:wasDerivedFrom ?any }} }} WHERE {{ "
            f"{values('st', map(NamedNode, some))} "
            f"{values('rule', map(Literal, JOINT_RULES))} GRAPH {src} {{ ?st sr:rule ?rule ; prov:wasDerivedFrom "
            f"?any }} }}"
        )
    for some in slices(statements):  # once every derivation that goes is gone
        orphans = (
            f"{values('st', map(NamedNode, some))} GRAPH {src} {{ ?st rdf:reifies <<( ?s ?p ?o )>> "
            f"FILTER NOT EXISTS {{ ?st prov:wasDerivedFrom ?any }} }}"
        )
        ops += [
            f"DELETE {{ GRAPH {kg} {{ ?s ?p ?o }} }} WHERE {{ {orphans} "
            f'FILTER NOT EXISTS {{ GRAPH {src} {{ ?decision rdf:reifies <<( ?s ?p ?o )>> ; sr:rule "curated" }} '
            f"}} }}",
            f"DELETE {{ GRAPH {src} {{ ?st ?x ?y }} }} WHERE {{ {orphans} GRAPH {src} {{ ?st ?x ?y }} }}",
        ]
    return " ;\n".join(ops)


PLACEMENT = (vocab.SR_OFFSET, vocab.SR_INDEX, vocab.BIBO_PAGE_START, vocab.BIBO_PAGE_END, vocab.SR_HEADING_PATH)


def placement(iris: Iris, chunks: list[ChunkRecord]) -> str:
    """Kept chunks may move within the new text (to another page, under another heading):
    their placement_quads are written again."""
    if not chunks:
        return ""
    src = sparql_term(iris.source_graph)
    return (
        f"DELETE {{ GRAPH {src} {{ ?chunk ?p ?o }} }} WHERE {{ {values('chunk', [c.iri for c in chunks])} "
        f"{values('p', PLACEMENT)} GRAPH {src} {{ ?chunk ?p ?o }} }} ;\n"
        + insert_data(quad for chunk in chunks for quad in placement_quads(iris, chunk))
    )


def record_update(iris: Iris, record: DocumentRecord, status: str, created: datetime, existing: object) -> str:
    """Replace the document's own triples (title, hash, status...) in the source graph."""
    src, doc = sparql_term(iris.source_graph), sparql_term(record.iri)
    clear = f"DELETE WHERE {{ GRAPH {src} {{ {doc} ?p ?o }} }} ;\n" if existing is not None else ""
    return clear + insert_data(document_quads(iris, record, status, created))


NOT_FACTS = (*vocab.NAME_PREDICATES, vocab.SKOS_DEFINITION)  # what names or defines a thing states nothing of it


def facts_count(iris: Iris, document: NamedNode) -> str:
    """Record how many facts the document's chunks support (sr:facts), for the library's listing
    and the ingest's report: its distinct statements less the names and definitions of what it
    mentions (those are how a thing is called, not facts to count); run after its chunks are
    written, in the same request."""
    src, doc = sparql_term(iris.source_graph), sparql_term(document)
    names = ", ".join(sparql_term(p) for p in NOT_FACTS)
    return (
        f"INSERT {{ GRAPH {src} {{ {doc} sr:facts ?n }} }} WHERE {{ SELECT (COUNT(DISTINCT ?st) AS ?n) WHERE {{ "
        f"GRAPH {src} {{ ?chunk prov:wasDerivedFrom {doc} ; a sr:Chunk . ?st prov:wasDerivedFrom ?chunk ; "
        f"rdf:reifies <<( ?s ?p ?o )>> FILTER(?p NOT IN ({names})) }} }} }}"  # (asked of RDF 1.1 stores too)
    )
