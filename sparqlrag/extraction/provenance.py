"""A chunk's knowledge as quads, with RDF 1.2 provenance for every fact (docs/architecture.md, "Data model").

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
from sparqlrag.extraction.names import name_key
from sparqlrag.extraction.resolution import Mention, Merge, Resolution
from sparqlrag.extraction.structure import HEADING_SEPARATOR, Place
from sparqlrag.store import vocab
from sparqlrag.store.vocab import Iris

XSD_DATETIME = NamedNode(vocab.XSD + "dateTime")


def time_literal(moment: datetime) -> Literal:
    return Literal(moment.isoformat(), datatype=XSD_DATETIME)


@dataclass(frozen=True)
class ChunkRecord:
    document: NamedNode
    iri: NamedNode
    index: int
    offset: int
    text: str
    place: Place = Place()


def placement_quads(iris: Iris, chunk: ChunkRecord) -> list[Quad]:
    """Where the chunk lies in its document: offset, index, pages (bibo) and heading path. A
    chunk kept through an edit may move, so these are written again on their own (updates.placement)."""
    source = iris.source_graph
    quads = [
        Quad(chunk.iri, vocab.SR_OFFSET, Literal(chunk.offset), source),
        Quad(chunk.iri, vocab.SR_INDEX, Literal(chunk.index), source),
    ]
    if chunk.place.pages is not None:
        first, last = chunk.place.pages
        quads += [
            Quad(chunk.iri, vocab.BIBO_PAGE_START, Literal(first), source),
            Quad(chunk.iri, vocab.BIBO_PAGE_END, Literal(last), source),
        ]
    if chunk.place.headings:
        path = Literal(HEADING_SEPARATOR.join(chunk.place.headings))
        quads.append(Quad(chunk.iri, vocab.SR_HEADING_PATH, path, source))
    return quads


def entity_iri(iris: Iris, mention: Mention, ontology: str | None) -> NamedNode:
    """The IRI a name gets on its own: typed by its class under the ontology that typed it, or not."""
    if mention.type and ontology:
        return iris.typed_entity(ontology, mention.type, mention.name)
    return iris.entity(mention.name)


def knowledge_triples(
    iris: Iris, knowledge: Knowledge, resolution: Resolution | None = None
) -> list[tuple[Triple, str | None]]:
    """The knowledge-graph triples of a chunk, each with its evidence sentence when known. With
    a resolution, a name resolved to another thing's IRI is written there as `skos:altLabel`, and
    a fact it makes say a thing about itself ("W3C is known as W3C") is dropped."""
    triples: dict[Triple, str | None] = {}

    def add(triple: Triple, sentence: str | None = None) -> None:
        if triples.get(triple) is None:
            triples[triple] = sentence

    types = {e.name: e.type for e in knowledge.entities if e.type}

    def entity(name: str) -> NamedNode:
        mention = Mention(name, types.get(name))
        own = entity_iri(iris, mention, knowledge.ontology)
        node = NamedNode(resolution.iris[mention]) if resolution and mention in resolution.iris else own
        add(Triple(node, vocab.RDFS_LABEL if node == own else vocab.SKOS_ALT_LABEL, Literal(name)))
        if mention.type:
            add(Triple(node, vocab.RDF_TYPE, NamedNode(mention.type)))
        return node

    for item in knowledge.entities:
        node = entity(item.name)
        if item.definition:
            add(Triple(node, vocab.SKOS_DEFINITION, Literal(item.definition)))
    for alias, _ in knowledge.aliases:  # an alias an LLM proposed is a name only where resolution took it
        mention = Mention(alias, types.get(alias))
        if resolution and resolution.iris.get(mention, "") not in (
            "",
            entity_iri(iris, mention, knowledge.ontology).value,
        ):
            entity(alias)
    for fact in knowledge.facts:
        if fact.predicate == COOCCURS:
            predicate = vocab.SR_COOCCURS
        elif fact.property:
            predicate = NamedNode(fact.property)  # the ontology labels it
        else:
            predicate = iris.predicate(fact.predicate)
            add(Triple(predicate, vocab.RDFS_LABEL, Literal(fact.predicate)))
        subject, obj = entity(fact.subject), entity(fact.object) if fact.object_entity else Literal(fact.object)
        if subject != obj:
            add(Triple(subject, predicate, obj), fact.sentence)
    return list(triples.items())


def _keyed(iris: Iris, statement: NamedNode, triple: Triple) -> list[Quad]:
    """A name's reifier carries the name's key (names.name_key), so that resolution finds
    the entities a new name may be by one indexed lookup."""
    subject, name = triple.subject, triple.object
    if (
        triple.predicate not in (vocab.RDFS_LABEL, vocab.SKOS_ALT_LABEL)
        or not isinstance(subject, NamedNode)
        or not isinstance(name, Literal)
    ):
        return []
    if not subject.value.startswith(iris.entity("").value):  # (a relation's label: no entity)
        return []
    return [Quad(statement, vocab.SR_KEY, Literal(name_key(name.value)), iris.source_graph)]


def merge_quads(iris: Iris, merges: list[Merge]) -> list[Quad]:
    """Each merge as the reifier of `alias owl:sameAs target`, with its rule, score and evidence
    chunks, so SPARQL shows why two names are one thing. A shared merge asserts the triple and
    carries the alias's key (other documents' names resolve through it); a merge that holds in
    one document only (a partial name) is a reifier of a triple nobody asserts."""
    quads = []
    for merge in merges:
        triple = Triple(NamedNode(merge.alias_iri), vocab.OWL_SAME_AS, NamedNode(merge.target))
        statement, source = iris.statement(triple), iris.source_graph
        quads += [
            Quad(statement, vocab.RDF_REIFIES, triple, source),
            Quad(statement, vocab.SR_RULE, Literal(merge.rule), source),
            Quad(statement, vocab.SR_SCORE, Literal(merge.score), source),
            Quad(statement, vocab.SR_ALIAS, Literal(merge.alias), source),
        ]
        quads += [Quad(statement, vocab.PROV_DERIVED, NamedNode(chunk), source) for chunk in merge.evidence]
        if merge.shared:
            quads += [
                Quad(triple.subject, triple.predicate, triple.object, iris.knowledge_graph),
                Quad(statement, vocab.SR_KEY, Literal(name_key(merge.alias)), source),
            ]
    return quads


def chunk_quads(
    iris: Iris,
    chunk: ChunkRecord,
    knowledge: Knowledge,
    extractor: str,
    llm_name: str | None,
    started: datetime,
    ended: datetime,
    resolution: Resolution | None = None,
) -> list[Quad]:
    """The chunk, its extraction activity, its knowledge triples and their reifiers."""
    kg, source = iris.knowledge_graph, iris.source_graph
    activity = iris.activity(chunk.iri)
    quads = [
        Quad(chunk.iri, vocab.RDF_TYPE, vocab.SR_CHUNK, source),
        Quad(chunk.iri, vocab.PROV_DERIVED, chunk.document, source),
        Quad(chunk.iri, vocab.SR_TEXT, Literal(chunk.text), source),
        *placement_quads(iris, chunk),
        Quad(activity, vocab.RDF_TYPE, vocab.PROV_ACTIVITY, source),
        Quad(activity, vocab.PROV_USED, chunk.iri, source),
        Quad(activity, vocab.SR_EXTRACTOR, Literal(extractor), source),
        Quad(activity, vocab.PROV_STARTED, time_literal(started), source),
        Quad(activity, vocab.PROV_ENDED, time_literal(ended), source),
    ]
    if llm_name:
        quads.append(Quad(activity, vocab.SR_MODEL, Literal(llm_name), source))
    if knowledge.rejected:
        quads.append(Quad(activity, vocab.SR_REJECTED, Literal(knowledge.rejected), source))
    for triple, sentence in knowledge_triples(iris, knowledge, resolution):
        statement = iris.statement(triple)
        quads += [
            Quad(triple.subject, triple.predicate, triple.object, kg),
            Quad(statement, vocab.RDF_REIFIES, triple, source),
            Quad(statement, vocab.PROV_DERIVED, chunk.iri, source),
            *_keyed(iris, statement, triple),
        ]
        if sentence:
            quads.append(Quad(statement, vocab.SR_SENTENCE, Literal(sentence), source))
    return quads


@dataclass(frozen=True)
class DocumentRecord:
    iri: NamedNode
    title: str
    source: str
    media_type: str
    sha256: str
    pages: int | None = None


def document_quads(iris: Iris, document: DocumentRecord, status: str, created: datetime) -> list[Quad]:
    source = iris.source_graph
    quads = (
        [] if document.pages is None else [Quad(document.iri, vocab.BIBO_NUM_PAGES, Literal(document.pages), source)]
    )
    return quads + [
        Quad(document.iri, vocab.RDF_TYPE, vocab.SR_DOCUMENT, source),
        Quad(document.iri, vocab.DCTERMS_TITLE, Literal(document.title), source),
        Quad(document.iri, vocab.DCTERMS_SOURCE, Literal(document.source), source),
        Quad(document.iri, vocab.DCTERMS_FORMAT, Literal(document.media_type), source),
        Quad(document.iri, vocab.SR_SHA256, Literal(document.sha256), source),
        Quad(document.iri, vocab.SR_STATUS, Literal(status), source),
        Quad(document.iri, vocab.DCTERMS_CREATED, time_literal(created), source),
    ]
