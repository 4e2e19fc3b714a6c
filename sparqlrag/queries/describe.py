"""What the server says about the IRIs it mints: the linked-data descriptions behind `/id/...`
(entities), `/rel/...` (relations) and `/doc/...` (documents and their chunks).

An entity `{base}id/C/...` lives in collection C's knowledge graph. Its description is its
label, definition, types and aliases, the facts it takes part in (out and in, up to
FACT_LIMIT each way), the labels of everything they name (from its collection's knowledge graph
and the loaded ontologies' graphs, so ontology classes and properties read as their ontology
labels them, and no other collection's graph is ever read), and for each fact the chunks of the
documents it was extracted from (through its reifier) with the evidence sentence.

A relation `{base}rel/...` (a predicate minted from extracted text) is shared by every
collection: its label, and facts that use it from any of them (up to FACT_LIMIT).

A document or chunk `{base}doc/C/...` lives in C's source graph: its own properties, and a
document's chunks or a chunk's text and the facts extracted from it, so provenance can be
followed by clicking from a fact to its chunk to its document.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyoxigraph import Literal, NamedNode, Triple

from sparqlrag.library.librarian import DocumentInfo, collection_exists, documents
from sparqlrag.retrieval.document_rag import Passage, passages_of
from sparqlrag.store import vocab
from sparqlrag.store.aliases import canonicals
from sparqlrag.store.base import QuadStore
from sparqlrag.store.fact_sources import fact_sources
from sparqlrag.store.select import Term, lexical, number, select_terms
from sparqlrag.store.sparql_text import sparql_term, values
from sparqlrag.store.vocab import InvalidName, Iris, collection_of_graph, local_name

FACT_LIMIT = 500
DESCRIPTIVE = {
    vocab.RDFS_LABEL,
    vocab.SKOS_DEFINITION,
    vocab.RDF_TYPE,
    vocab.SKOS_ALT_LABEL,
}  # shown as the header, not as facts


@dataclass(frozen=True)
class Evidence:
    """A chunk a fact was extracted from, through the fact's reifier, with its evidence sentence."""

    passage: Passage
    sentence: str | None
    reifier: str


@dataclass
class Statement:
    fact: Triple
    evidence: list[Evidence] = field(default_factory=list)


class _Naming:
    """How a page shows a term: an IRI by its label (or its last segment), a literal as itself."""

    labels: dict[str, str]

    def name_of(self, term: Term) -> str:
        if isinstance(term, NamedNode):
            return self.labels.get(term.value) or local_name(term.value)
        return term.value if isinstance(term, Literal) else str(term)

    @staticmethod
    def is_iri(term: Term) -> bool:
        return isinstance(term, NamedNode)


@dataclass
class Description(_Naming):
    iri: str
    collection: str
    label: str
    definition: str | None
    types: list[str]
    aliases: list[str]
    outgoing: list[Statement]  # the entity is the subject
    incoming: list[Statement]  # the entity is the object
    labels: dict[str, str]  # IRI -> label, for every IRI the facts name

    def triples(self) -> list[Triple]:
        """The description as RDF: every fact in or out, with the labels of what they name (RDF
        1.1 terms only, so any RDF parser reads it: a fact about a fact is left out; provenance
        stays in the SPARQL endpoint)."""
        facts = [s.fact for s in (*self.outgoing, *self.incoming) if not isinstance(s.fact.object, Triple)]
        named = {t.value for f in facts for t in (f.subject, f.predicate, f.object) if isinstance(t, NamedNode)}
        labels = [
            Triple(NamedNode(iri), vocab.RDFS_LABEL, Literal(self.labels[iri]))
            for iri in sorted(named)
            if iri in self.labels
        ]
        return list(dict.fromkeys([*facts, *labels]))


def collection_of_iri(base_iri: str, iri: str, kind: str = "id") -> str | None:
    """The collection an IRI we mint belongs to (`{base}id/C/...`, `{base}doc/C/...`), if it is ours."""
    prefix = f"{base_iri}{kind}/"
    if not iri.startswith(prefix) or "/" not in iri[len(prefix) :]:
        return None
    return iri[len(prefix) :].split("/", 1)[0]


def resolved(store: QuadStore, base_iri: str, iri: str, kind: str = "id") -> tuple[Iris, NamedNode] | None:
    """The collection and node of an IRI that could be one of our entities (or of another
    `kind`: "doc", "trace", "stmt"); None for any other string: a path a client sent may be no
    IRI at all."""
    name = collection_of_iri(base_iri, iri, kind)
    try:
        iris, node = Iris(base_iri, name or ""), NamedNode(iri)
    except (InvalidName, ValueError):
        return None
    return (iris, node) if collection_exists(store, iris) else None


def document_of(store: QuadStore, base_iri: str, iri: str) -> DocumentInfo | None:
    """The document `iri` names (None for a chunk, or an IRI that is no document's)."""
    found = resolved(store, base_iri, iri, "doc")
    rows = documents(store, *found) if found is not None else []
    return rows[0] if rows else None


def canonical(store: QuadStore, base_iri: str, iri: str) -> str | None:
    """The IRI an alias stands for (entity resolution's owl:sameAs), or None when `iri` is no alias."""
    found = resolved(store, base_iri, iri)
    return canonicals(store, found[0], [iri]).get(iri) if found else None


def exists(
    store: QuadStore, base_iri: str, iri: str, kind: str = "id", collections: frozenset[str] | None = None
) -> bool:
    """Whether a fact of the entity's collection names it, the source graph has the document
    or chunk, or a fact (of `collections`, when given) uses the relation (cheaper than describing it)."""
    if kind == "rel":
        return bool(_relation_facts(store, base_iri, iri, 1, collections))
    found = resolved(store, base_iri, iri, kind)
    if found is None:
        return False
    iris, node = found
    term = sparql_term(node)
    if kind == "doc":
        return bool(
            select_terms(
                store, f"SELECT ?p WHERE {{ GRAPH {sparql_term(iris.source_graph)} {{ {term} ?p ?x }} }} LIMIT 1"
            )
        )
    kg = sparql_term(iris.knowledge_graph)
    return bool(
        select_terms(
            store, f"SELECT ?x WHERE {{ GRAPH {kg} {{ {{ {term} ?p ?x }} UNION {{ ?x ?p {term} }} }} }} LIMIT 1"
        )
    )


def describe(store: QuadStore, base_iri: str, iri: str) -> Description | None:
    """The entity's description, or None when no fact of its collection names it."""
    found = resolved(store, base_iri, iri)
    if found is None:
        return None
    iris, node = found
    kg = sparql_term(iris.knowledge_graph)
    outgoing = select_terms(
        store, f"SELECT ?p ?o WHERE {{ GRAPH {kg} {{ {sparql_term(node)} ?p ?o }} }} LIMIT {FACT_LIMIT}"
    )
    incoming = select_terms(
        store, f"SELECT ?s ?p WHERE {{ GRAPH {kg} {{ ?s ?p {sparql_term(node)} }} }} LIMIT {FACT_LIMIT}"
    )
    if not outgoing and not incoming:
        return None
    out = [Triple(node, row["p"], row["o"]) for row in outgoing]  # type: ignore[arg-type]
    into = [Triple(row["s"], row["p"], node) for row in incoming]  # type: ignore[arg-type]
    evidence = _evidence(store, iris, out + into)
    labels = _labels(
        store,
        base_iri,
        {t for f in out + into for t in (f.subject, f.predicate, f.object) if isinstance(t, NamedNode)},
        [iris.knowledge_graph],
    )
    about: dict[NamedNode, list[str]] = {}  # the header: label, definition, types, aliases
    for fact in out:
        if fact.predicate in DESCRIPTIVE:
            about.setdefault(fact.predicate, []).append(lexical(fact.object))
    return Description(
        iri,
        iris.collection,
        (about.get(vocab.RDFS_LABEL) or [local_name(iri)])[0],
        next(iter(about.get(vocab.SKOS_DEFINITION, [])), None),
        about.get(vocab.RDF_TYPE, []),
        about.get(vocab.SKOS_ALT_LABEL, []),
        [Statement(f, evidence.get(f, [])) for f in out if f.predicate not in DESCRIPTIVE],
        [Statement(f, evidence.get(f, [])) for f in into],
        labels,
    )


def fact_evidence(store: QuadStore, iris: Iris, fact: Triple) -> list[Evidence]:
    """The chunks of ready documents a fact was extracted from (none for a fact loaded without provenance)."""
    return _evidence(store, iris, [fact]).get(fact, [])


def _evidence(store: QuadStore, iris: Iris, facts: list[Triple]) -> dict[Triple, list[Evidence]]:
    rows = fact_sources(store, iris, facts)
    passages = {
        p.chunk: p for p in passages_of(store, iris, list(dict.fromkeys(lexical(row["chunk"]) for row in rows)), {})
    }
    found: dict[Triple, list[Evidence]] = {}
    for row in rows:
        if (passage := passages.get(lexical(row["chunk"]))) is not None:
            sentence = lexical(row["sentence"]) if "sentence" in row else None
            fact = Triple(row["s"], row["p"], row["o"])  # type: ignore[arg-type]
            found.setdefault(fact, []).append(Evidence(passage, sentence, lexical(row["st"])))
    return found


def _labels(store: QuadStore, base_iri: str, nodes: set[NamedNode], graphs: list[NamedNode]) -> dict[str, str]:
    """A label for each node that has a name in `graphs` (the collections' knowledge graphs a
    page shows: rdfs:label, else another of vocab.NAME_PREDICATES) or an rdfs:label in a loaded
    ontology's graph, or in our own vocabulary."""
    ours = {node.value: label for node in nodes if (label := vocab.vocabulary_labels().get(node.value))}
    if not nodes:
        return {}
    registry = sparql_term(vocab.registry_graph(base_iri))
    rows = select_terms(
        store,
        vocab.SPARQL_PREFIXES
        + f"""SELECT ?x ?l ?name_rank WHERE {{ {values("x", sorted(nodes, key=str))}
        {{ {values("g", graphs)} GRAPH ?g {{ {vocab.named_by("?x", "?l")} }} }}
        UNION {{ GRAPH {registry} {{ ?g a sr:Ontology }} GRAPH ?g {{ ?x rdfs:label ?l }} BIND(0 AS ?name_rank) }} }}""",
    )
    named = [{name: lexical(term) for name, term in row.items()} for row in rows]
    return ours | vocab.preferred(named, "x", "l")


@dataclass
class SourceDescription(_Naming):
    """A document, or a chunk of one, as its page shows it."""

    iri: str
    collection: str
    title: str  # the document's
    document: str  # the document's IRI (its own, for a document)
    properties: list[Triple]  # its own triples in the source graph
    chunks: list[tuple[str, int, str]]  # a document's chunks: IRI, index, text
    text: str | None = None  # a chunk's text
    facts: list[Triple] = field(default_factory=list)  # the facts extracted from a chunk
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def is_chunk(self) -> bool:
        return self.text is not None

    def triples(self) -> list[Triple]:
        """Its own triples, and for a document, each chunk's derivation from it."""
        node = NamedNode(self.iri)
        return self.properties + [Triple(NamedNode(chunk), vocab.PROV_DERIVED, node) for chunk, _, _ in self.chunks]


def describe_source(store: QuadStore, base_iri: str, iri: str) -> SourceDescription | None:
    """The document or chunk at `iri`, or None when the source graph does not have it."""
    found = resolved(store, base_iri, iri, "doc")
    if found is None:
        return None
    iris, node = found
    src = sparql_term(iris.source_graph)
    own = select_terms(store, f"SELECT ?p ?o WHERE {{ GRAPH {src} {{ {sparql_term(node)} ?p ?o }} }}")
    if not own:
        return None
    properties = [Triple(node, row["p"], row["o"]) for row in own]  # type: ignore[arg-type]
    value = {t.predicate: t.object for t in properties}
    if value.get(vocab.RDF_TYPE) == vocab.SR_CHUNK:
        document = value[vocab.PROV_DERIVED]
        title = select_terms(
            store,
            vocab.SPARQL_PREFIXES + f"SELECT ?t WHERE {{ GRAPH {src} {{ {sparql_term(document)} dcterms:title ?t }} }}",
        )
        facts = [
            Triple(row["s"], row["p"], row["o"])  # type: ignore[arg-type]
            for row in select_terms(
                store,
                vocab.SPARQL_PREFIXES
                + f"""SELECT ?s ?p ?o WHERE {{ GRAPH {src} {{
            ?st prov:wasDerivedFrom {sparql_term(node)} ; rdf:reifies <<( ?s ?p ?o )>> FILTER(?p != rdfs:label) }} }}
              LIMIT {FACT_LIMIT}""",
            )
        ]
        named = {t for f in facts for t in (f.subject, f.predicate, f.object) if isinstance(t, NamedNode)}
        return SourceDescription(
            iri,
            iris.collection,
            lexical(title[0]["t"]) if title else local_name(lexical(document)),
            lexical(document),
            properties,
            [],
            lexical(value[vocab.SR_TEXT]),
            facts,
            _labels(store, base_iri, named, [iris.knowledge_graph]),
        )
    chunks = select_terms(
        store,
        vocab.SPARQL_PREFIXES
        + f"""SELECT ?c ?i ?text WHERE {{ GRAPH {src} {{
        ?c prov:wasDerivedFrom {sparql_term(node)} ; a sr:Chunk ; sr:index ?i ; sr:text ?text }} }} ORDER BY ?i""",
    )
    document_title = value.get(vocab.DCTERMS_TITLE)
    return SourceDescription(
        iri,
        iris.collection,
        lexical(document_title) if document_title else local_name(iri),
        iri,
        properties,
        [(lexical(row["c"]), int(number(row["i"], 0) or 0), lexical(row["text"])) for row in chunks],
    )


@dataclass
class RelationDescription(_Naming):
    """A relation minted from extracted text, and facts that use it."""

    iri: str
    label: str
    facts: list[tuple[str, Triple]]  # (collection, fact)
    labels: dict[str, str]

    def triples(self) -> list[Triple]:
        """Its label and its kind: the facts stay in their collections' graphs."""
        node = NamedNode(self.iri)
        return [
            Triple(node, vocab.RDF_TYPE, NamedNode(vocab.RDF + "Property")),
            Triple(node, vocab.RDFS_LABEL, Literal(self.label)),
        ]


def _relation_facts(
    store: QuadStore, base_iri: str, iri: str, limit: int, collections: frozenset[str] | None = None
) -> list[tuple[str, Triple]]:
    """Up to `limit` facts that use the relation at `iri`, with their collection: of any
    collection, or of `collections` alone."""
    if not iri.startswith(f"{base_iri}rel/"):
        return []
    try:
        node = NamedNode(iri)
    except ValueError:
        return []
    graphs = f"{base_iri}graph/"
    narrowed = (
        "" if collections is None else values("g", [Iris(base_iri, c).knowledge_graph for c in sorted(collections)])
    )
    rows = select_terms(
        store,
        f"""SELECT ?g ?s ?o WHERE {{ {narrowed} GRAPH ?g {{ ?s {sparql_term(node)} ?o }}
        FILTER(STRSTARTS(STR(?g), {sparql_term(Literal(graphs))})) }} LIMIT {limit}""",
    )
    return [
        (name, Triple(row["s"], node, row["o"]))  # type: ignore[arg-type]
        for row in rows
        if (name := collection_of_graph(base_iri, lexical(row["g"]))) is not None
        and lexical(row["g"]) == Iris(base_iri, name).knowledge_graph.value
    ]


def describe_relation(
    store: QuadStore, base_iri: str, iri: str, collections: frozenset[str] | None = None
) -> RelationDescription | None:
    """The relation at `iri` with facts using it in any collection (or in `collections`), or
    None when none does."""
    facts = _relation_facts(store, base_iri, iri, FACT_LIMIT, collections)
    if not facts:
        return None
    labels = _labels(
        store,
        base_iri,
        {NamedNode(iri)} | {t for _, f in facts for t in (f.subject, f.object) if isinstance(t, NamedNode)},
        [Iris(base_iri, name).knowledge_graph for name in sorted({name for name, _ in facts})],
    )
    return RelationDescription(iri, labels.get(iri) or local_name(iri), facts, labels)
