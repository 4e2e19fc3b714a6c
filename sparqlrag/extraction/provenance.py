"""A chunk's knowledge as quads, with RDF 1.2 provenance for every fact (DESIGN.md, "Data model").

Every triple written to the knowledge graph, labels and definitions included, has one
reifier in the source graph, `rdf:reifies <<( s p o )>>`, derived from each chunk that
supports it. That gives one rule for deletion: a knowledge triple stays while its reifier
has a chunk to derive from.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pyoxigraph import Literal, NamedNode, Quad, Triple

from sparqlrag.extraction.knowledge import COOCCURS, Knowledge
from sparqlrag.store import vocab as v
from sparqlrag.store.vocab import Iris

XSD_DATETIME = NamedNode(v.XSD + "dateTime")


def _time(moment: datetime) -> Literal:
    return Literal(moment.isoformat(), datatype=XSD_DATETIME)


@dataclass(frozen=True)
class ChunkRecord:
    document: NamedNode
    iri: NamedNode
    index: int
    offset: int
    text: str


def knowledge_triples(iris: Iris, knowledge: Knowledge) -> list[tuple[Triple, str | None]]:
    """The knowledge-graph triples of a chunk, each with its evidence sentence when known."""
    triples: dict[Triple, str | None] = {}

    def add(triple: Triple, sentence: str | None = None) -> None:
        if triples.get(triple) is None:
            triples[triple] = sentence

    types = {e.name: e.type for e in knowledge.entities if e.type}

    def entity(name: str) -> NamedNode:
        cls = types.get(name)
        node = iris.typed_entity(knowledge.ontology, cls, name) if cls and knowledge.ontology else iris.entity(name)
        add(Triple(node, v.RDFS_LABEL, Literal(name)))
        if cls:
            add(Triple(node, v.RDF_TYPE, NamedNode(cls)))
        return node

    for item in knowledge.entities:
        node = entity(item.name)
        if item.definition:
            add(Triple(node, v.SKOS_DEFINITION, Literal(item.definition)))
    for fact in knowledge.facts:
        if fact.predicate == COOCCURS:
            predicate = v.SR_COOCCURS
        elif fact.property:
            predicate = NamedNode(fact.property)  # the ontology labels it
        else:
            predicate = iris.predicate(fact.predicate)
            add(Triple(predicate, v.RDFS_LABEL, Literal(fact.predicate)))
        obj = entity(fact.object) if fact.object_entity else Literal(fact.object)
        add(Triple(entity(fact.subject), predicate, obj), fact.sentence)
    return list(triples.items())


def chunk_quads(
    iris: Iris, chunk: ChunkRecord, knowledge: Knowledge, extractor: str, model: str | None,
    started: datetime, ended: datetime,
) -> list[Quad]:  # fmt: skip
    """The chunk, its extraction activity, its knowledge triples and their reifiers."""
    kg, source = iris.knowledge_graph, iris.source_graph
    activity = iris.activity(chunk.iri)
    quads = [
        Quad(chunk.iri, v.RDF_TYPE, v.SR_CHUNK, source),
        Quad(chunk.iri, v.PROV_DERIVED, chunk.document, source),
        Quad(chunk.iri, v.SR_TEXT, Literal(chunk.text), source),
        Quad(chunk.iri, v.SR_OFFSET, Literal(chunk.offset), source),
        Quad(chunk.iri, v.SR_INDEX, Literal(chunk.index), source),
        Quad(activity, v.RDF_TYPE, v.PROV_ACTIVITY, source),
        Quad(activity, v.PROV_USED, chunk.iri, source),
        Quad(activity, v.SR_EXTRACTOR, Literal(extractor), source),
        Quad(activity, v.PROV_STARTED, _time(started), source),
        Quad(activity, v.PROV_ENDED, _time(ended), source),
    ]
    if model:
        quads.append(Quad(activity, v.SR_MODEL, Literal(model), source))
    if knowledge.rejected:
        quads.append(Quad(activity, v.SR_REJECTED, Literal(knowledge.rejected), source))
    for triple, sentence in knowledge_triples(iris, knowledge):
        statement = iris.statement(triple)
        quads += [
            Quad(triple.subject, triple.predicate, triple.object, kg),
            Quad(statement, v.RDF_REIFIES, triple, source),
            Quad(statement, v.PROV_DERIVED, chunk.iri, source),
        ]
        if sentence:
            quads.append(Quad(statement, v.SR_SENTENCE, Literal(sentence), source))
    return quads


@dataclass(frozen=True)
class DocumentRecord:
    iri: NamedNode
    title: str
    source: str
    media_type: str
    sha256: str


def document_quads(iris: Iris, document: DocumentRecord, status: str, created: datetime) -> list[Quad]:
    source = iris.source_graph
    return [
        Quad(document.iri, v.RDF_TYPE, v.SR_DOCUMENT, source),
        Quad(document.iri, v.DCTERMS_TITLE, Literal(document.title), source),
        Quad(document.iri, v.DCTERMS_SOURCE, Literal(document.source), source),
        Quad(document.iri, v.DCTERMS_FORMAT, Literal(document.media_type), source),
        Quad(document.iri, v.SR_SHA256, Literal(document.sha256), source),
        Quad(document.iri, v.SR_STATUS, Literal(status), source),
        Quad(document.iri, v.DCTERMS_CREATED, _time(created), source),
    ]
