"""Provenance in the store: every extracted fact answers "which chunks and documents support it"."""

from __future__ import annotations

from datetime import UTC, datetime

from pyoxigraph import RdfFormat, serialize

from sparqlrag.extraction.offline import OfflineExtractor
from sparqlrag.extraction.provenance import ChunkRecord, DocumentRecord, chunk_quads, document_quads
from sparqlrag.store import EmbeddedStore
from sparqlrag.store.vocab import SPARQL_PREFIXES, Iris

NOW = datetime(2026, 12, 2, tzinfo=UTC)
TEXTS = {
    "doc-a": "Marie Curie was born in Warsaw. The Sorbonne is a university in Paris.",
    "doc-b": "Marie Curie was born in Warsaw and worked at the Sorbonne.",
}


def ingest(store: EmbeddedStore, iris: Iris) -> None:
    extractor = OfflineExtractor()
    for document_id, text in TEXTS.items():
        document = DocumentRecord(iris.document(document_id), document_id, f"{document_id}.txt", "text/plain", "0" * 64)
        chunk = ChunkRecord(document.iri, iris.chunk(document.iri, text), 0, 0, text)
        quads = document_quads(iris, document, "ready", NOW)
        quads += chunk_quads(iris, chunk, extractor.extract_sync(text), "offline", None, NOW, NOW)
        store.add_quads(serialize(quads, format=RdfFormat.N_QUADS))


def rows(store: EmbeddedStore, query: str) -> list[list[str]]:
    result = store.query(SPARQL_PREFIXES + query, accept="text/tab-separated-values", union_default_graph=True)
    return [line.split("\t") for line in result.body.decode().strip().splitlines()[1:]]


def test_every_fact_has_chunks_and_documents() -> None:
    store, iris = EmbeddedStore(), Iris("http://kb.example/")
    ingest(store, iris)
    knowledge = rows(store, f"SELECT ?s ?p ?o WHERE {{ GRAPH <{iris.knowledge_graph.value}> {{ ?s ?p ?o }} }}")
    unsupported = rows(
        store,
        f"""
        SELECT ?s ?p ?o WHERE {{
          GRAPH <{iris.knowledge_graph.value}> {{ ?s ?p ?o }}
          FILTER NOT EXISTS {{ GRAPH <{iris.source_graph.value}> {{
            << ?s ?p ?o >> prov:wasDerivedFrom ?chunk . ?chunk prov:wasDerivedFrom ?doc . ?doc a sr:Document }} }}
        }}""",
    )
    assert len(knowledge) > 8 and unsupported == []
    born = iris.predicate("was born in").value
    titles = rows(
        store,
        f"""
        SELECT DISTINCT ?title WHERE {{
          << ?s <{born}> ?o >> prov:wasDerivedFrom ?chunk .
          ?chunk prov:wasDerivedFrom ?doc . ?doc dcterms:title ?title .
        }} ORDER BY ?title""",
    )
    assert titles == [['"doc-a"'], ['"doc-b"']]  # one fact, two documents
    sentences = rows(
        store, f"SELECT ?sentence WHERE {{ << ?s <{born}> ?o >> sr:sentence ?sentence }} ORDER BY ?sentence"
    )
    assert sentences == [
        ['"Marie Curie was born in Warsaw and worked at the Sorbonne."'],
        ['"Marie Curie was born in Warsaw."'],
    ]
    statements = rows(store, f"SELECT (COUNT(DISTINCT ?r) AS ?n) WHERE {{ ?r rdf:reifies <<( ?s <{born}> ?o )>> }}")
    assert statements == [["1"]]  # one reifier for the fact, derived from both chunks
    activities = rows(
        store, "SELECT ?extractor WHERE { ?a a prov:Activity ; prov:used ?chunk ; sr:extractor ?extractor }"
    )
    assert activities == [['"offline"'], ['"offline"']]


def test_the_published_vocabulary_declares_every_term_the_code_writes() -> None:
    from importlib import resources

    from pyoxigraph import NamedNode, parse

    from sparqlrag.store import vocab

    with resources.as_file(resources.files("sparqlrag") / "store" / "vocab.ttl") as path:
        declared = {quad.subject for quad in parse(path=str(path), format=RdfFormat.TURTLE)}
    used = {
        value for value in vars(vocab).values() if isinstance(value, NamedNode) and value.value.startswith(vocab.SR)
    }
    assert len(used) > 20 and used - declared == set()
