"""The graph index (store/graph_index.py) on real parts: after every kind of write its rows are
the rows a rebuild from the store gives; synonyms stay inside their collection; PageRank's stage
is in the trace."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparqlrag.config import Settings
from sparqlrag.models.embedder import Embedder
from sparqlrag.models.reranker import CosineReranker
from sparqlrag.retrieval.trace_json import read_trace
from sparqlrag.services import Models, Services
from sparqlrag.store import EmbeddedStore
from sparqlrag.store.graph_index import NO_CHUNK, GraphIndex, Mention
from sparqlrag.store.local_vectors import LocalVectors
from sparqlrag.store.select import lexical, select
from sparqlrag.store.vector_index import alias_facet
from sparqlrag.store.vocab import SPARQL_PREFIXES, Iris

BASE = "http://kb.example/"
DEFAULT = Iris(BASE)  # the default collection's IRIs
DOCS = {
    "curie": "Marie Curie was born in Warsaw. Marie Curie worked at the Sorbonne.",
    "warsaw": "Warsaw is the capital of Poland. The Vistula flows through Warsaw.",
    "sorbonne": "The Sorbonne is a university in Paris. Marie Curie taught physics at the Sorbonne.",
    "bread": "Sourdough bread is baked from flour and a fermented starter.",
}


@pytest.fixture(scope="module")
def models(embedder: Embedder) -> Models:
    return Models(embedder, CosineReranker(embedder), None)


@pytest.fixture
def services(tmp_path: Path, models: Models) -> Iterator[Services]:
    opened = Services.open(
        Settings(data_dir=tmp_path, base_iri=BASE, reranker_model=None), EmbeddedStore(tmp_path / "store"), None, models
    )
    yield opened
    opened.close()
    opened.store.close()


def ingest(services: Services, documents: dict[str, str], collection: str = "default") -> None:
    for name, text in documents.items():
        result = asyncio.run(services.pipeline.ingest(Iris(BASE, collection), name, text.encode(), title=name))
        assert result.status == "ready"


def graph(services: Services) -> GraphIndex:
    return services.indexer.graph


def as_rebuilt(services: Services, collection: str = "default") -> tuple[list[tuple[str, ...]], ...]:
    """The collection's rows as written, after checking them against a rebuild from the store."""
    index = graph(services)
    written = index.rows(collection)
    index.rebuild(Iris(BASE, collection))
    assert index.rows(collection) == written
    return written


def test_every_write_leaves_the_rows_a_rebuild_from_the_store_gives(services: Services, tmp_path: Path) -> None:
    ingest(services, DOCS)
    passages, mentions, synonyms = as_rebuilt(services)
    chunks = {row[1] for row in passages}
    assert len(chunks) == len(DOCS) and {row[1] for row in mentions} <= chunks
    assert synonyms, "the offline extractor's names give some synonym pairs (Warsaw, Poland)"
    assert all(float(row[3]) >= 0.8 for row in synonyms)
    entities = {end for row in mentions for end in row[3:] if end}
    assert {end for row in synonyms for end in row[1:3]} <= entities  # only between the graph's entities

    assert asyncio.run(services.pipeline.forget(DEFAULT, "warsaw"))
    passages, mentions, synonyms = as_rebuilt(services)
    assert len(passages) == len(DOCS) - 1 and not any("/warsaw/" in row[1] for row in mentions)

    ingest(services, {"curie": "Marie Curie was born in Warsaw. Marie Curie discovered polonium in Paris."})
    passages, mentions, synonyms = as_rebuilt(services)  # written again: its old chunk gone, the new one in
    assert len(passages) == len(DOCS) - 1

    assert asyncio.run(services.collections.create("other"))
    ingest(services, DOCS, "other")
    assert graph(services).rows("other")[1]
    asyncio.run(services.cores.export("other", tmp_path / "other.zip"))
    asyncio.run(services.cores.import_(tmp_path / "other.zip", into="copy"))
    copied = as_rebuilt(services, "copy")
    assert len(copied[0]) == len(DOCS) and len(copied[1]) == len(graph(services).rows("other")[1])
    assert asyncio.run(services.collections.delete("other"))
    assert graph(services).rows("other") == ([], [], [])

    asyncio.run(services.indexer.reindex(DEFAULT))  # (names embedded again: scores may move a little)
    again = graph(services).rows("default")
    assert again[:2] == (passages, mentions) and {r[1:3] for r in again[2]} == {r[1:3] for r in synonyms}


def test_synonym_edges_never_cross_collections(services: Services) -> None:
    asyncio.run(services.collections.create("twin"))
    ingest(services, DOCS)
    ingest(services, DOCS, "twin")
    for collection in ("default", "twin"):
        own = Iris(BASE, collection).entity("").value
        _, mentions, synonyms = graph(services).rows(collection)
        assert synonyms and all(row[1].startswith(own) and row[2].startswith(own) for row in synonyms)
        view = graph(services).view(collection)
        assert all(name.startswith(own) for name in view.names[view.passages :])


def test_a_graph_loaded_rather_than_ingested_is_indexed_by_sparqlrag_index(services: Services) -> None:
    """Facts no passage states still join their entities (`sparqlrag index` on a loaded graph)."""
    iris = Iris(BASE)
    warsaw, poland = iris.entity("Warsaw").value, iris.entity("Poland").value
    kg = iris.knowledge_graph.value
    services.store.update(
        SPARQL_PREFIXES
        + f"""INSERT DATA {{ GRAPH <{kg}> {{ <{warsaw}> rdfs:label "Warsaw" ; <{BASE}rel/capital-of> <{poland}> .
        <{poland}> rdfs:label "Poland" }} }}"""
    )
    asyncio.run(services.indexer.index_graph(DEFAULT))
    passages, mentions, _ = graph(services).rows("default")
    assert passages == [] and [(row[1], row[3], row[4]) for row in mentions] == [("", warsaw, poland)]
    assert graph(services).view("default").empty  # no passage: nothing for PageRank to rank
    ingest(services, {"warsaw": "Warsaw is the capital of Poland."})
    _, mentions, _ = as_rebuilt(services)  # the loaded fact, stated by no passage, is kept beside the ingested ones
    assert ("", warsaw, poland) in {(row[1], row[3], row[4]) for row in mentions}
    view = graph(services).view("default")
    assert view.passages == 1 and (view.vertex[warsaw], view.vertex[poland]) in {
        edge.tuple for edge in view.graph.es
    } | {edge.tuple[::-1] for edge in view.graph.es}


def test_a_loaded_graphs_alt_labels_and_same_as_ground_a_question(services: Services) -> None:
    """`sparqlrag index` on someone else's graph follows its own names: a skos:altLabel grounds
    on its entity (the seed says which name), and an owl:sameAs seeds the IRI it joins when the
    graph says something of it; a sameAs to an IRI it says nothing of is no seed."""
    ibm, armonk, flint = (f"http://data.example/{name}" for name in ("ibm", "armonk", "flint"))
    wikidata, dbpedia = "http://www.wikidata.org/entity/Q37156", "http://dbpedia.org/resource/IBM"
    kg = Iris(BASE).knowledge_graph.value
    services.store.update(
        SPARQL_PREFIXES
        + f"""INSERT DATA {{ GRAPH <{kg}> {{
        <{ibm}> rdfs:label "International Business Machines" ; skos:altLabel "Big Blue" ;
          <http://data.example/headquartered-in> <{armonk}> ; owl:sameAs <{wikidata}>, <{dbpedia}> .
        <{armonk}> rdfs:label "Armonk" . <{flint}> rdfs:label "Charles Ranlett Flint" .
        <{wikidata}> <http://data.example/founded-by> <{flint}> }} }}"""
    )
    asyncio.run(services.indexer.index_graph(DEFAULT))
    walk = asyncio.run(services.graph_rag.retrieve(DEFAULT, "Where is Big Blue headquartered?", mode="graph"))
    seeds = {seed.entity: seed for seed in walk.seeds}
    assert ibm in seeds and seeds[ibm].alias == "Big Blue"
    assert wikidata in seeds and seeds[wikidata].score == seeds[ibm].score and dbpedia not in seeds
    assert {(lexical(e.fact.subject), lexical(e.fact.object)) for e in walk.edges} >= {(ibm, armonk), (wikidata, flint)}
    services.vectors.delete("default", "entities", [ibm])
    assert not services.vectors.existing("default", "entities", [ibm], alias_facet("Big Blue"))


def test_a_loaded_graphs_names_in_common_vocabularies_are_its_labels(services: Services) -> None:
    """A FOAF, schema.org, SKOS or Dublin Core graph names its things without rdfs:label
    (issue 37, item 7): those names are indexed, ground questions, and word the walk's edges;
    where an entity has several, rdfs:label wins and the others are alias points."""
    alice, bob, acme, report = (f"http://people.example/{name}" for name in ("alice", "bob", "acme", "report"))
    kg = Iris(BASE).knowledge_graph.value
    services.store.update(
        SPARQL_PREFIXES
        + f"""PREFIX foaf: <http://xmlns.com/foaf/0.1/> PREFIX schema: <https://schema.org/>
        PREFIX dcterms: <http://purl.org/dc/terms/> INSERT DATA {{ GRAPH <{kg}> {{
        <{alice}> foaf:name "Alice Smith" ; foaf:knows <{bob}> ; schema:worksFor <{acme}> .
        <{bob}> foaf:name "Bob Jones" ; skos:prefLabel "Robert Jones" .
        <{acme}> schema:name "Acme Corporation" ; rdfs:label "Acme" .
        <{report}> dcterms:title "Annual Report 2024" ; dcterms:creator <{alice}> }} }}"""
    )
    entities, _ = asyncio.run(services.indexer.index_graph(DEFAULT))
    assert entities == 6  # four labels, and the other names of Acme and Bob
    assert services.vectors.existing("default", "entities", [acme], alias_facet("Acme Corporation"))
    walk = asyncio.run(services.graph_rag.retrieve(DEFAULT, "Who does Alice Smith know?", mode="graph"))
    assert alice in {seed.entity for seed in walk.seeds}
    texts = {e.text for e in walk.edges}
    assert "Alice Smith knows Robert Jones" in texts and "Alice Smith worksFor Acme" in texts, texts
    assert all("alice" not in text for text in texts)


def test_the_pagerank_mode_ranks_by_pagerank_and_traces_its_seeds(services: Services) -> None:
    ingest(services, DOCS)
    answer = asyncio.run(services.graph_rag.answer(DEFAULT, "Where did Marie Curie work?", mode="pagerank"))
    assert answer.passages and answer.passages[0].title in ("curie", "sorbonne")
    record = read_trace(services.store, Iris(BASE), answer.trace.rsplit("/", 1)[-1])
    assert record is not None
    trace = record.as_json()
    assert trace["mode"] == "graph-rag/pagerank"
    assert [step["name"] for step in trace["steps"]][-2:] == ["pagerank", "synthesis"]
    seeds = trace["pagerank_seeds"]
    assert seeds and all(seed["weight"] > 0 for seed in seeds)
    answered = answer.view().as_json()["pagerank_seeds"]  # the answer carries them too, with the facts that seeded them
    assert {(s["entity"], s["weight"]) for s in answered} == {(s["entity"], s["weight"]) for s in seeds}
    assert all(s["facts"] for s in answered)
    assert Iris(BASE).entity("Marie Curie").value in {seed["entity"] for seed in seeds}
    carried = [source for source in trace["sources"] if source["carried_by"]]
    assert carried and all(source["carried_by_statements"] for source in carried)
    # in SPARQL: the entities that carried the first passage, each a node of the graph index
    rows = select(
        services.store,
        SPARQL_PREFIXES
        + f"""SELECT ?entity WHERE {{ GRAPH ?g {{ <{answer.trace}> sr:source ?source .
        ?source sr:rank 1 ; sr:carriedBy ?entity }} }}""",
    )
    view = graph(services).view("default")
    assert rows and all(row["entity"] in view.vertex for row in rows)


def test_a_fact_a_passage_comes_to_state_leaves_the_facts_no_passage_states(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")
    index = GraphIndex(store, LocalVectors(384, tmp_path / "vectors.sqlite"), tmp_path / "graph.sqlite")
    try:
        loaded = Mention(NO_CHUNK, "http://x/stmt/1", "http://x/a", "http://x/b")
        index.write("c", [], [loaded])
        assert index.rows("c")[1] == [("c", *loaded)]
        stated = loaded._replace(chunk="http://x/chunk/1")
        index.write("c", [stated.chunk], [stated, loaded])  # (a rebuild offers both)
        assert index.rows("c")[:2] == ([("c", stated.chunk)], [("c", *stated)])
        index.remove_chunks("c", [stated.chunk])
        assert index.rows("c") == ([], [], []) and index.statements("c") == set()
    finally:
        index.close()
        store.close()
