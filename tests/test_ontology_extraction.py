"""Ontology-guided extraction on real parts: the ontologies in tests/data read by owlready2, subsets
selected with the packaged MiniLM and FAISS, the LLM through the real `anthropic` client and
the Messages API stub; the offline path typing entities by class labels."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from pyoxigraph import Literal, NamedNode, Triple

from sparqlrag.config import Settings
from sparqlrag.extraction.guided import GuidedExtractor, TypedOfflineExtractor, conform
from sparqlrag.extraction.knowledge import Entity, Fact
from sparqlrag.extraction.plans import IngestResult, Source
from sparqlrag.extraction.provenance import knowledge_triples
from sparqlrag.models.embedder import Embedder
from sparqlrag.models.llm import AnthropicModel
from sparqlrag.ontology.owl import OntologyModel, owlready
from sparqlrag.ontology.reading import read_ontology
from sparqlrag.ontology.registry import OntologyConflict
from sparqlrag.ontology.selection import ElementIndex, OntologyGuide, Selector, Subset
from sparqlrag.queries.describe import describe
from sparqlrag.services import Services
from sparqlrag.store import EmbeddedStore, vocab
from sparqlrag.store.select import lexical, select
from sparqlrag.store.vocab import SPARQL_PREFIXES, Iris
from tests.conftest import TEST_DATA
from tests.llm_stub import Reply, serve_stub

FOAF, ORG, SCHEMA = "http://xmlns.com/foaf/0.1/", "http://www.w3.org/ns/org#", "http://schema.org/"
# the LLM's answer for "Jane Smith is a member of ACME": the second relationship runs the wrong way
JANE_AT_ACME = {
    "entities": [
        {"name": "Jane Smith", "class": FOAF + "Agent"},
        {"name": "ACME", "class": ORG + "FormalOrganization"},
    ],
    "relationships": [
        {"subject": "Jane Smith", "property": ORG + "memberOf", "object": "ACME"},
        {"subject": "ACME", "property": ORG + "memberOf", "object": "Jane Smith"},
    ],
}


def model(name: str, iri: str) -> OntologyModel:
    path = TEST_DATA / "ontologies" / f"{name}.ttl"
    return owlready.model(iri, read_ontology(path.read_bytes(), filename=path.name))


@pytest.fixture(scope="module")
def org() -> OntologyModel:
    return model("org", ORG)


def test_conform_keeps_what_fits_the_ontology_and_counts_the_rest(org: OntologyModel) -> None:
    answer = {
        "entities": [
            {"name": "Jane Smith", "class": FOAF + "Person"},  # classes ORG uses without declaring them
            {"name": "Bob Jones", "class": FOAF + "Agent"},
            {"name": "ACME", "class": "formal organization"},  # a label, any case
            {"name": "Finance", "class": ORG + "OrganizationalUnit"},
            {"name": "Nobody", "class": ORG + "NoSuchClass"},  # rejected: no such class
            {"class": ORG + "Post"},  # rejected: no name
        ],
        "relationships": [
            {
                "subject": "Bob Jones",
                "property": ORG + "memberOf",
                "object": "ACME",
            },  # a FormalOrganization is an Organization
            {
                "subject": "Jane Smith",
                "property": ORG + "memberOf",
                "object": "ACME",
            },  # rejected: ORG alone does not say a Person is an Agent
            {"subject": "Finance", "property": "unitOf", "object": "ACME"},  # by local name
            {
                "subject": "ACME",
                "property": ORG + "memberOf",
                "object": "Jane Smith",
            },  # rejected: range is Organization
            {"subject": "Jane Smith", "property": ORG + "headOf", "object": "Nobody"},  # rejected: Nobody was rejected
            {"subject": "Jane Smith", "property": ORG + "noSuchProperty", "object": "ACME"},  # rejected
            {"subject": "Jane Smith", "property": ORG + "location", "object": "ACME"},  # rejected: a datatype property
        ],
        "attributes": [
            {"entity": "Jane Smith", "property": ORG + "location", "value": "Mail Stop 4"},
            {"entity": "ACME", "property": ORG + "location", "value": "Floor 2"},  # rejected: the domain is foaf:Person
            {"entity": "Jane Smith", "property": ORG + "memberOf", "value": "ACME"},  # rejected: an object property
        ],
    }
    knowledge = conform(org, "org", answer)
    assert knowledge.entities == [
        Entity("Jane Smith", type=FOAF + "Person"),
        Entity("Bob Jones", type=FOAF + "Agent"),
        Entity("ACME", type=ORG + "FormalOrganization"),
        Entity("Finance", type=ORG + "OrganizationalUnit"),
    ]
    assert knowledge.facts == [
        Fact("Bob Jones", "member of", "ACME", True, property=ORG + "memberOf"),
        Fact("Finance", "unit Of", "ACME", True, property=ORG + "unitOf"),  # ORG's own label
        Fact("Jane Smith", "location", "Mail Stop 4", False, property=ORG + "location"),
    ]
    assert knowledge.rejected == 9 and knowledge.ontology == "org"  # 2 entities, 5 relationships, 2 attributes
    assert conform(org, "org", "not an object").rejected == 0 and conform(org, "org", {"entities": "x"}).entities == []


def test_typed_knowledge_becomes_typed_iris_and_rdf_type_facts(org: OntologyModel) -> None:
    knowledge = conform(
        org,
        "org",
        {
            "entities": [
                {"name": "Jane Smith", "class": FOAF + "Agent"},
                {"name": "ACME Ltd", "class": ORG + "FormalOrganization"},
            ],
            "relationships": [{"subject": "Jane Smith", "property": ORG + "memberOf", "object": "ACME Ltd"}],
        },
    )
    iris = Iris("http://kb.example/", "hr")
    triples = {t for t, _ in knowledge_triples(iris, knowledge)}
    jane, acme = (
        NamedNode("http://kb.example/id/hr/org/Agent/jane-smith"),
        NamedNode("http://kb.example/id/hr/org/FormalOrganization/acme-ltd"),
    )
    assert (
        Triple(jane, vocab.RDF_TYPE, NamedNode(FOAF + "Agent")) in triples
        and Triple(acme, vocab.RDF_TYPE, NamedNode(ORG + "FormalOrganization")) in triples
    )
    assert (
        Triple(jane, NamedNode(ORG + "memberOf"), acme) in triples
        and Triple(jane, vocab.RDFS_LABEL, Literal("Jane Smith")) in triples
    )
    assert not any(
        lexical(t.subject).startswith("http://kb.example/rel/") for t in triples
    )  # the ontology's own property, no minted one


def test_the_llm_sees_the_subset_and_its_answer_is_checked(embedder: Embedder, org: OntologyModel) -> None:
    selector = Selector(embedder)
    index = ElementIndex(org, embedder)
    text = "Jane Smith is a member of ACME, a formal organization. Her mail stop is 4."
    answer = JANE_AT_ACME
    stub, stop = serve_stub()
    try:
        stub.script(Reply("```json\n" + json.dumps(answer) + "\n```"))
        extractor = GuidedExtractor(
            AnthropicModel("claude-test", api_key="sk-test", base_url=stub.url), "org", OntologyGuide(index, selector)
        )
        knowledge = asyncio.run(extractor.extract(text))
    finally:
        stop()
    assert [f.property for f in knowledge.facts] == [ORG + "memberOf"] and knowledge.rejected == 1
    assert {e.type for e in knowledge.entities} == {FOAF + "Agent", ORG + "FormalOrganization"}
    (prompt,) = [r["messages"][0]["content"] for r in stub.requests]
    assert text in prompt and f"- {ORG}FormalOrganization (Formal Organization)" in prompt
    assert f"- {ORG}memberOf (member of): Agent -> Organization" in prompt
    listed = set(re.findall(r"^- (\S+) \(", prompt.split("Classes:")[1].split("Object properties:")[0], re.M))
    # the chunk's subset: what the answer needs, and not the whole ontology
    assert {ORG + "FormalOrganization", FOAF + "Agent"} <= listed < org.classes.keys()
    assert extractor.llm_name == "anthropic:claude-test" and extractor.name == "llm+ontology"


def test_offline_extraction_types_entities_by_class_labels(embedder: Embedder) -> None:
    schema = model("schemaorg_subset", SCHEMA)
    extractor = TypedOfflineExtractor("schema", OntologyGuide(ElementIndex(schema, embedder), Selector(embedder)))
    knowledge = asyncio.run(
        extractor.extract(
            "Warsaw is a city in Poland. Acme Corporation employs Jane Smith. Huckleberry Finn is a book by Mark Twain."
        )
    )
    types = {e.name: e.type for e in knowledge.entities}
    assert types["Warsaw"] == SCHEMA + "City" and types["Acme Corporation"] == SCHEMA + "Corporation"
    assert types["Huckleberry Finn"] == SCHEMA + "Book" and types["Poland"] is None  # nothing says what Poland is
    assert knowledge.ontology == "schema" and extractor.name == "offline+ontology"
    triples = {t for t, _ in knowledge_triples(Iris("http://kb.example/"), knowledge)}
    assert (
        Triple(NamedNode("http://kb.example/id/default/schema/City/warsaw"), vocab.RDF_TYPE, NamedNode(SCHEMA + "City"))
        in triples
    )


# -- through the pipeline: a collection created with an ontology ---------------------------------

BASE = "http://kb.example/"
DEFAULT = Iris(BASE)  # the default collection's IRIs


def open_services(root: Path, **settings: object) -> tuple[Services, EmbeddedStore]:
    store = EmbeddedStore(root / "store")
    return Services.open(Settings(data_dir=root, base_iri=BASE, reranker_model=None, **settings), store), store  # type: ignore[arg-type]


def activity(services: Services, collection: str) -> dict[str, str]:
    (row,) = select(
        services.store,
        SPARQL_PREFIXES
        + f"""SELECT ?extractor ?rejected WHERE {{
        GRAPH <{BASE}graph/{collection}/source> {{ ?a a prov:Activity ; sr:extractor ?extractor OPTIONAL {{ ?a
          sr:rejected ?rejected }} }} }}""",
    )
    return row


def test_a_collection_with_an_ontology_gets_typed_knowledge_offline(tmp_path: Path) -> None:
    services, store = open_services(tmp_path)
    try:
        services.ontologies.load_sync(
            "schema", (TEST_DATA / "ontologies/schemaorg_subset.ttl").read_bytes(), filename="s.ttl"
        )
        assert asyncio.run(services.collections.create("books", "schema"))
        asyncio.run(
            services.pipeline.ingest(
                Iris(BASE, "books"),
                "twain",
                b"Huckleberry Finn is a book by Mark Twain. Hartford is a city in Connecticut.",
            )
        )
        typed = select(
            store,
            SPARQL_PREFIXES
            + f"""SELECT ?e ?class ?chunk WHERE {{ GRAPH <{BASE}graph/books> {{ ?e a ?class }}
            GRAPH <{BASE}graph/books/source> {{ ?st rdf:reifies <<( ?e rdf:type ?class )>> ; prov:wasDerivedFrom
              ?chunk }} }}""",
        )
        assert {(r["e"], r["class"]) for r in typed} == {
            (f"{BASE}id/books/schema/Book/huckleberry-finn", SCHEMA + "Book"),
            (f"{BASE}id/books/schema/City/hartford", SCHEMA + "City"),
        }
        assert all("/doc/books/twain/chunk/" in r["chunk"] for r in typed)  # each type has its provenance
        book = describe(store, BASE, f"{BASE}id/books/schema/Book/huckleberry-finn")  # what /id/ serves for a typed IRI
        assert book is not None and (book.label, book.types, book.collection) == (
            "Huckleberry Finn",
            [SCHEMA + "Book"],
            "books",
        )
        assert book.labels[SCHEMA + "Book"] == "Book"  # the class named as the ontology labels it
        assert activity(services, "books")["extractor"] == "offline+ontology"
        assert asyncio.run(services.collections.get("books")).ontology == "schema"  # type: ignore[union-attr]
        asyncio.run(services.pipeline.ingest(DEFAULT, "twain", b"Huckleberry Finn is a book by Mark Twain."))
        assert activity(services, "default")["extractor"] == "offline"  # other collections extract as before
        with pytest.raises(OntologyConflict, match="'books' extracts with ontology 'schema'"):
            services.ontologies.remove_sync("schema")
    finally:
        services.close()
        store.close()


def test_documents_ingested_together_are_selected_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    services, store = open_services(tmp_path)
    try:
        services.ontologies.load_sync(
            "schema", (TEST_DATA / "ontologies/schemaorg_subset.ttl").read_bytes(), filename="s.ttl"
        )
        asyncio.run(services.collections.create("notes", "schema"))
        selector = services.pipeline.extractor_for.guides.selector  # type: ignore[union-attr]
        batches: list[int] = []

        def counted(index: ElementIndex, chunks: list[str]) -> list[Subset]:
            batches.append(len(chunks))
            return Selector.select(selector, index, chunks)

        monkeypatch.setattr(selector, "select", counted)
        notes = [
            Source(f"note-{n}", f"Hartford is a city in Connecticut. Note {n} says so.".encode()) for n in range(20)
        ]
        results = asyncio.run(services.pipeline.ingest_many(Iris(BASE, "notes"), notes))
        assert all(isinstance(r, IngestResult) and r.chunks_added == 1 for r in results)
        assert sum(batches) == 20  # each chunk selected once, ahead of its extraction
        assert len(batches) < 10  # one-chunk documents queue while a selection runs: typically 1, 16, 3
        cities = select(store, f"SELECT ?e WHERE {{ GRAPH <{BASE}graph/notes> {{ ?e a <{SCHEMA}City> }} }}")
        assert cities == [{"e": f"{BASE}id/notes/schema/City/hartford"}]
    finally:
        services.close()
        store.close()


def test_guided_llm_extraction_through_the_pipeline(tmp_path: Path) -> None:
    answer = JANE_AT_ACME
    stub, stop = serve_stub()
    stub.script(Reply(json.dumps(answer)))
    services, store = open_services(
        tmp_path, llm="anthropic", llm_base_url=stub.url, llm_api_key="sk-test", extractor="llm"
    )
    try:
        services.ontologies.load_sync("org", (TEST_DATA / "ontologies/org.ttl").read_bytes(), filename="org.ttl")
        asyncio.run(services.collections.create("hr", "org"))
        asyncio.run(services.pipeline.ingest(Iris(BASE, "hr"), "memo", b"Jane Smith is a member of ACME."))
        facts = select(store, f"SELECT ?s ?o WHERE {{ GRAPH <{BASE}graph/hr> {{ ?s <{ORG}memberOf> ?o }} }}")
        assert facts == [{"s": f"{BASE}id/hr/org/Agent/jane-smith", "o": f"{BASE}id/hr/org/FormalOrganization/acme"}]
        assert activity(services, "hr") == {"extractor": "llm+ontology", "rejected": "1"}
        (request,) = stub.requests
        assert "Jane Smith is a member of ACME." in request["messages"][0]["content"]
    finally:
        services.close()
        store.close()
        stop()
