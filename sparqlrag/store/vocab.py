"""Vocabulary (PROV-O, Dublin Core, SKOS and the small `sr:` namespace) and IRI minting.

Every IRI the system writes is minted here, so the layout of docs/architecture.md ("Data model") lives
in one place: graphs per collection, entity and predicate IRIs from names, statement
reifiers from the triple they reify, documents, chunks and extraction activities.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Annotated
from urllib.parse import quote, unquote

from pydantic import AfterValidator, Field, Strict
from pyoxigraph import Literal, NamedNode, RdfFormat, Triple, parse

SR = "https://w3id.org/sparqlrag/ns#"
PROV = "http://www.w3.org/ns/prov#"
DCTERMS = "http://purl.org/dc/terms/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
OWL = "http://www.w3.org/2002/07/owl#"
XSD = "http://www.w3.org/2001/XMLSchema#"
BIBO = "http://purl.org/ontology/bibo/"  # the Bibliographic Ontology: a chunk's pages, a document's page count

PREFIXES = {
    "sr": SR,
    "prov": PROV,
    "dcterms": DCTERMS,
    "rdf": RDF,
    "rdfs": RDFS,
    "skos": SKOS,
    "owl": OWL,
    "xsd": XSD,
    "bibo": BIBO,
}
SPARQL_PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in PREFIXES.items())


@cache
def vocabulary_labels() -> dict[str, str]:
    """The labels vocab.ttl gives the sr: terms ("co-occurs with"), for pages that show them."""
    triples = parse((Path(__file__).parent / "vocab.ttl").read_bytes(), format=RdfFormat.TURTLE)
    return {
        t.subject.value: t.object.value for t in triples if t.predicate == RDFS_LABEL and isinstance(t.object, Literal)
    }


def term(namespace: str, local: str) -> NamedNode:
    return NamedNode(namespace + local)


RDF_TYPE = term(RDF, "type")
RDF_REIFIES = term(RDF, "reifies")
RDF_STATEMENT, RDF_SUBJECT = term(RDF, "Statement"), term(RDF, "subject")  # RDF 1.1 reification (reification.py)
RDF_PREDICATE, RDF_OBJECT = term(RDF, "predicate"), term(RDF, "object")
RDFS_LABEL = term(RDFS, "label")
SKOS_DEFINITION = term(SKOS, "definition")
SKOS_ALT_LABEL = term(SKOS, "altLabel")
OWL_SAME_AS = term(OWL, "sameAs")
OWL_DIFFERENT_FROM = term(OWL, "differentFrom")
PROV_DERIVED = term(PROV, "wasDerivedFrom")
PROV_USED = term(PROV, "used")
PROV_ACTIVITY = term(PROV, "Activity")
PROV_GENERATED = term(PROV, "wasGeneratedBy")
PROV_STARTED = term(PROV, "startedAtTime")
PROV_ENDED = term(PROV, "endedAtTime")
DCTERMS_TITLE = term(DCTERMS, "title")
DCTERMS_SOURCE = term(DCTERMS, "source")
DCTERMS_FORMAT = term(DCTERMS, "format")
DCTERMS_CREATED = term(DCTERMS, "created")
SKOS_PREF_LABEL = term(SKOS, "prefLabel")
# What a graph names its things with, the preferred first: rdfs:label (what ingest writes), then the
# vocabularies loaded graphs use (SKOS, FOAF, schema.org over http and https, Dublin Core's title).
NAME_PREDICATES = (
    RDFS_LABEL,
    SKOS_PREF_LABEL,
    NamedNode("http://xmlns.com/foaf/0.1/name"),
    NamedNode("http://schema.org/name"),
    NamedNode("https://schema.org/name"),
    DCTERMS_TITLE,
    NamedNode("http://purl.org/dc/elements/1.1/title"),
)
NAME_PATH = "|".join(f"<{p.value}>" for p in NAME_PREDICATES)  # a SPARQL path: any name


def named_by(subject: str, name: str, predicates: Sequence[NamedNode] = NAME_PREDICATES) -> str:
    """A SPARQL pattern binding `name` to each literal name of `subject` by `predicates` (of
    NAME_PREDICATES), and ?name_rank to its predicate's place in NAME_PREDICATES (`preferred`
    picks by it)."""
    ranks = " ".join(f"(<{p.value}> {NAME_PREDICATES.index(p)})" for p in predicates)
    return (
        f"VALUES (?name_predicate ?name_rank) {{ {ranks} }} {subject} ?name_predicate {name} FILTER(isLiteral({name}))"
    )


def preferred(rows: Iterable[dict[str, str]], key: str, name: str) -> dict[str, str]:
    """Each `key`'s name from `named_by` rows: the most preferred predicate's, the least text of those."""
    best: dict[str, tuple[int, str]] = {}
    for row in rows:
        offer = (int(row["name_rank"]), row[name])
        if row[key] not in best or offer < best[row[key]]:
            best[row[key]] = offer
    return {subject: text for subject, (_, text) in best.items()}


SR_COLLECTION = term(SR, "Collection")
SR_KNOWLEDGE_GRAPH = term(SR, "knowledgeGraph")
SR_SOURCE_GRAPH = term(SR, "sourceGraph")
SR_TRACE_GRAPH = term(SR, "traceGraph")
SR_DOCUMENT = term(SR, "Document")
SR_CHUNK = term(SR, "Chunk")
SR_STATEMENT = term(SR, "Statement")
SR_TEXT = term(SR, "text")
SR_OFFSET = term(SR, "offset")
SR_INDEX = term(SR, "index")
SR_HEADING_PATH = term(SR, "headingPath")
BIBO_PAGE_START, BIBO_PAGE_END = term(BIBO, "pageStart"), term(BIBO, "pageEnd")
BIBO_NUM_PAGES = term(BIBO, "numPages")
SR_SHA256 = term(SR, "sha256")
SR_STATUS = term(SR, "status")
SR_PROGRESS = term(SR, "progress")
SR_FACTS = term(SR, "facts")
SR_ERROR = term(SR, "error")
SR_MODEL = term(SR, "model")
SR_SCORER = term(SR, "scorer")
SR_SCOPE_CHUNKS, SR_SCOPE_DOCUMENT = term(SR, "scopeChunks"), term(SR, "scopeDocument")
SR_SCOPE_PATTERN = term(SR, "scopePattern")
SR_ASKED_AS, SR_TURN, SR_CARRIED_TERM = term(SR, "askedAs"), term(SR, "turn"), term(SR, "carriedTerm")
SR_EXTRACTOR = term(SR, "extractor")
SR_SENTENCE = term(SR, "sentence")
SR_COOCCURS = term(SR, "cooccursWith")
SR_TRACE = term(SR, "Trace")
SR_SOURCE_CLASS = term(SR, "Source")
SR_QUESTION = term(SR, "question")
SR_ANSWER = term(SR, "answer")
SR_MODE = term(SR, "mode")
SR_SOURCE = term(SR, "source")
SR_CHUNK_OF_SOURCE = term(SR, "chunk")
SR_RANK = term(SR, "rank")
SR_SCORE = term(SR, "score")
SR_INPUT_TOKENS = term(SR, "inputTokens")
SR_OUTPUT_TOKENS = term(SR, "outputTokens")
SR_DURATION = term(SR, "durationMs")
SR_CONCEPT = term(SR, "concept")
SR_SEED = term(SR, "seed")
SR_SEED_CLASS = term(SR, "Seed")
SR_ENTITY = term(SR, "entity")
SR_EXPLORED = term(SR, "exploredEdges")
SR_RELEVANCE = term(SR, "relevance")
SR_EVIDENCE_SENTENCE = term(SR, "evidenceSentence")
SR_EVIDENCE_CHUNK = term(SR, "evidenceChunk")
SR_SELECTED_EDGE = term(SR, "selectedEdge")
SR_SELECTED_EDGE_CLASS = term(SR, "SelectedEdge")
SR_FACT = term(SR, "fact")
SR_STATEMENT_OF_EDGE = term(SR, "statement")
SR_HOP = term(SR, "hop")
SR_REASONING = term(SR, "reasoning")
SR_VIA = term(SR, "via")
SR_SUPPORTS = term(SR, "supports")
SR_PAGERANK_SEED = term(SR, "pagerankSeed")
SR_PAGERANK_SEED_CLASS = term(SR, "PageRankSeed")
SR_WEIGHT = term(SR, "weight")
SR_CARRIED_BY = term(SR, "carriedBy")
SR_CARRIED_BY_STATEMENT = term(SR, "carriedByStatement")
SR_BRIDGED_BY = term(SR, "bridgedBy")
SR_REJECTED = term(SR, "rejected")
SR_USES_ONTOLOGY = term(SR, "usesOntology")
SR_PREFIXES = term(SR, "prefixes")
SR_ONTOLOGY = term(SR, "Ontology")
SR_NAME = term(SR, "name")
SR_CLASS_COUNT = term(SR, "classCount")
SR_PROPERTY_COUNT = term(SR, "propertyCount")
SR_TRIPLE_COUNT = term(SR, "tripleCount")
DCTERMS_MODIFIED = term(DCTERMS, "modified")
SR_STEP = term(SR, "step")
SR_STEP_CLASS = term(SR, "Step")
SR_KEY = term(SR, "key")
SR_RULE = term(SR, "rule")
SR_ALIAS = term(SR, "alias")

# sr:status values of a document
QUEUED, PROCESSING, READY, FAILED = "queued", "processing", "ready", "failed"

NAME_PATTERN = "[a-z0-9][a-z0-9_-]{0,63}"  # a collection's or ontology's name (also in the OpenAPI document)
_NAME = re.compile(NAME_PATTERN)


class InvalidName(ValueError):
    """A collection or document name that cannot be part of an IRI."""


def slug(name: str) -> str:
    """Lower-case, NFKC-normalised, hyphenated, percent-encoded: the same name gives the same IRI."""
    text = unicodedata.normalize("NFKC", name).strip().lower()
    text = re.sub(r"\s+", "-", text)
    return quote(text, safe="-._~")


def original_file(document_iri: str, page: int | None = None) -> str:
    """Where the server gives a document's original file (server/originals.py): `{base}file/doc/C/ID`,
    opened at `page` (`#page=3`, as PDF viewers take it) when one is given."""
    head, _, rest = document_iri.rpartition("/doc/")
    return f"{head}/file/doc/{rest}" + (f"#page={page}" if page is not None else "")


def local_name(iri: str) -> str:
    """A readable name for an IRI that has no label: its last segment, hyphens as spaces."""
    return unquote(iri.rstrip("/").rsplit("/", 1)[-1].rsplit("#", 1)[-1]).replace("-", " ").replace("_", " ")


def is_name(name: str) -> bool:
    """Whether `name` is a valid collection or ontology name."""
    return _NAME.fullmatch(name) is not None


def check_name(name: str, what: str) -> str:
    """A collection's or ontology's name: it becomes part of IRIs and URLs."""
    if not _NAME.fullmatch(name):
        raise InvalidName(
            f"{what} names are 1-64 characters of a-z, 0-9, '-' and '_', starting with a letter or digit; got {name!r}"
        )
    return name


def check_collection(name: str) -> str:
    return check_name(name, "collection")


def _shown(what: str) -> dict[str, str]:
    """How JSON Schema shows a name check_name takes: the same pattern."""
    return {"pattern": f"^{NAME_PATTERN}$", "description": f"the {what}: 1-64 of a-z, 0-9, '-', '_'"}


# request fields naming a collection or an ontology (retrieval/options.py, operations/requests.py)
CollectionName = Annotated[
    str, Strict(), AfterValidator(check_collection), Field(json_schema_extra=_shown("collection"))
]
OntologyName = Annotated[
    str, Strict(), AfterValidator(partial(check_name, what="ontology")), Field(json_schema_extra=_shown("ontology"))
]


def registry_graph(base: str) -> NamedNode:
    """The server's own registry: which collections exist (and the ontology each extracts
    with) and which ontologies are loaded. Its name starts with '_', which no collection's
    can, so no collection-limited token can write it, and no collection's data is it."""
    return NamedNode(f"{base}graph/_registry")


def server_graphs(base: str) -> list[NamedNode]:
    """Every graph the server owns, apart from the collections' own (tests check each against
    the collection-name grammar)."""
    return [registry_graph(base)]


def collection_of_graph(base: str, graph: str) -> str | None:
    """The collection whose graph `graph` is (`{base}graph/C` or `{base}graph/C/...`); None for
    any other IRI, a server graph, or one with '.' or '..' segments (which a client or store
    could resolve to another collection's graph)."""
    prefix = f"{base}graph/"
    if not graph.startswith(prefix):
        return None
    segments = graph[len(prefix) :].split("/")
    if any(unquote(segment) in (".", "..") for segment in segments):
        return None
    return segments[0] if is_name(segments[0]) else None


DEFAULT_COLLECTION = "default"  # the collection every server has, and what a request names when it names none


@dataclass(frozen=True)
class Iris:
    """The IRIs of one collection under one base IRI."""

    base: str
    collection: str = DEFAULT_COLLECTION

    def __post_init__(self) -> None:
        check_collection(self.collection)

    @property
    def knowledge_graph(self) -> NamedNode:
        return NamedNode(f"{self.base}graph/{self.collection}")

    @property
    def source_graph(self) -> NamedNode:
        return NamedNode(f"{self.base}graph/{self.collection}/source")

    @property
    def trace_graph(self) -> NamedNode:
        return NamedNode(f"{self.base}graph/{self.collection}/trace")

    @property
    def collection_iri(self) -> NamedNode:
        return NamedNode(f"{self.base}collection/{self.collection}")

    def entity(self, name: str) -> NamedNode:
        return NamedNode(f"{self.base}id/{self.collection}/{slug(name)}")

    def typed_entity(self, ontology: str, cls: str, name: str) -> NamedNode:
        """An entity typed by an ontology class: `{base}id/C/{ontology}/{Class}/{slug}`."""
        local = quote(local_name(cls).replace(" ", ""), safe="-._~")
        return NamedNode(f"{self.base}id/{self.collection}/{ontology}/{local}/{slug(name)}")

    def predicate(self, phrase: str) -> NamedNode:
        return NamedNode(f"{self.base}rel/{slug(phrase)}")

    def statement(self, triple: Triple) -> NamedNode:
        """The reifier of a fact: named by a hash of the fact, so re-extraction finds it again."""
        digest = hashlib.sha1(str(triple).encode("utf-8")).hexdigest()
        return NamedNode(f"{self.base}stmt/{self.collection}/{digest}")

    def decision(self, triple: Triple) -> NamedNode:
        """The reifier of a person's decision about a fact (a curated merge or split), which
        forgetting documents never removes."""
        return NamedNode(self.statement(triple).value + "/curated")

    def document(self, document_id: str) -> NamedNode:
        return NamedNode(f"{self.base}doc/{self.collection}/{quote(document_id, safe='-._~')}")

    def document_id(self, document: str) -> str:
        """The id a document's IRI was minted from."""
        return unquote(document.removeprefix(self.document("").value))

    def chunk(self, document: NamedNode, text: str) -> NamedNode:
        """Named by the chunk's content: unchanged text keeps its IRI (and its facts) on re-ingest."""
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]
        return NamedNode(f"{document.value}/chunk/{digest}")

    def trace(self, trace_id: str) -> NamedNode:
        return NamedNode(f"{self.base}trace/{self.collection}/{trace_id}")

    @staticmethod
    def activity(chunk: NamedNode) -> NamedNode:
        return NamedNode(f"{chunk.value}/extraction")
