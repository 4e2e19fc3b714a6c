"""The registry graph: a data directory made before it keeps collection registrations in each
collection's source graph and ontology registrations in `{base}graph/ontologies`; at start they
move into the registry, and nothing a collection's writer planted moves with them."""

from __future__ import annotations

from pathlib import Path

from pyoxigraph import Literal, NamedNode, Quad

from sparqlrag.config import Settings
from sparqlrag.extraction.offline import OfflineExtractor
from sparqlrag.library import librarian
from sparqlrag.models.embedder import Embedder
from sparqlrag.models.reranker import CosineReranker
from sparqlrag.ontology.registry import Ontologies
from sparqlrag.services import Models, Services
from sparqlrag.store import EmbeddedStore, vocab
from sparqlrag.store.select import select
from sparqlrag.store.sparql_text import insert_data
from sparqlrag.store.vocab import Iris

BASE = "http://kb.example/"
ONTOLOGY = (
    b"@prefix owl: <http://www.w3.org/2002/07/owl#> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
    b'<http://ex/onto> a owl:Ontology . <http://ex/Person> a owl:Class ; rdfs:label "Person" .\n'
)


def _old_layout(store: EmbeddedStore, ontologies: Ontologies) -> None:
    """What an older version wrote: registrations in the source graphs and the old registry
    graph, and what a limited writer could have planted beside them."""
    ontologies.load_sync("people", ONTOLOGY)
    registry, old = vocab.registry_graph(BASE), NamedNode(f"{BASE}graph/ontologies")
    store.update(
        f"DELETE {{ GRAPH <{registry.value}> {{ ?s ?p ?o }} }} INSERT {{ GRAPH <{old.value}> {{ ?s ?p ?o }} }} "
        f"WHERE {{ GRAPH <{registry.value}> {{ ?s ?p ?o }} }}"
    )
    quads = []
    for name in ("alpha", "ontologies"):
        iris = Iris(BASE, name)
        quads += [Quad(q.subject, q.predicate, q.object, iris.source_graph) for q in librarian.collection_quads(iris)]
    alpha_source = Iris(BASE, "alpha").source_graph
    quads += [
        Quad(NamedNode("urn:fake"), vocab.RDF_TYPE, vocab.SR_COLLECTION, alpha_source),
        Quad(NamedNode(f"{BASE}collection/gamma"), vocab.RDF_TYPE, vocab.SR_COLLECTION, alpha_source),
        Quad(NamedNode(f"{BASE}graph/beta"), vocab.RDF_TYPE, vocab.SR_ONTOLOGY, old),
        Quad(NamedNode(f"{BASE}graph/beta"), vocab.SR_NAME, Literal("leak"), old),
    ]
    store.update(insert_data(quads))


def test_old_registrations_move_into_the_registry_once(tmp_path: Path, embedder: Embedder) -> None:
    store = EmbeddedStore(tmp_path / "store")
    settings = Settings(data_dir=tmp_path, base_iri=BASE, reranker_model=None)
    services = Services.open(settings, store, OfflineExtractor(), Models(embedder, CosineReranker(embedder), None))
    collections, ontologies = services.collections, services.ontologies
    try:
        _old_layout(store, ontologies)
        assert [c.name for c in collections.list_sync()] == ["default"]
        assert ontologies.list_sync() == []

        assert collections.move_registrations() == 2
        assert ontologies.move_registry() == 1
        assert [c.name for c in collections.list_sync()] == ["alpha", "default", "ontologies"]
        assert [o.name for o in ontologies.list_sync()] == ["people"]
        # the planted ones stayed where they were, and moved nothing
        alpha_source = Iris(BASE, "alpha").source_graph.value
        assert select(store, f"SELECT ?p WHERE {{ GRAPH <{alpha_source}> {{ <urn:fake> ?p ?o }} }}")
        assert not librarian.collection_exists(store, Iris(BASE, "gamma"))
        # a second start finds nothing left to move
        assert collections.move_registrations() == 0 and ontologies.move_registry() == 0
        ontologies.remove_sync("people")
        assert ontologies.list_sync() == []
    finally:
        services.close()
        store.close()
