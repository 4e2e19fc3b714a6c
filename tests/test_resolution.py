"""Entity resolution on real parts (pyoxigraph on disk, local vectors, the offline extractor and
embedder): one node per thing, every alias kept, each merge explained in SPARQL and undone when
its evidence goes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sparqlrag.config import Settings
from sparqlrag.extraction.curation_refusals import CurationRefused, UnknownEntity
from sparqlrag.extraction.plans import IngestResult, Source
from sparqlrag.library.librarian import UnknownCollection
from sparqlrag.retrieval.options import GraphRagOptions
from sparqlrag.retrieval.views import SeedView
from sparqlrag.services import Services
from sparqlrag.store import EmbeddedStore
from sparqlrag.store.select import lexical, select
from sparqlrag.store.vector_index import unit
from sparqlrag.store.vocab import SPARQL_PREFIXES, Iris
from tests.conftest import ROOT, TEST_DATA

BASE = "http://kb.example/"
DEFAULT = Iris(BASE)  # the default collection's IRIs
ID = f"{BASE}id/default/"
SCHEMA = "http://schema.org/"


@dataclass
class Kb:
    services: Services
    store: EmbeddedStore

    def ingest(self, document_id: str, text: str, collection: str = "default") -> None:
        (result,) = asyncio.run(
            self.services.pipeline.ingest_many(Iris(BASE, collection), [Source(document_id, text.encode())])
        )
        assert isinstance(result, IngestResult), result

    def forget(self, document_id: str, collection: str = "default") -> None:
        assert asyncio.run(self.services.pipeline.forget(Iris(BASE, collection), document_id))

    def rows(self, query: str) -> list[dict[str, str]]:
        return select(self.store, SPARQL_PREFIXES + query)

    def facts(self, collection: str = "default") -> set[tuple[str, str, str]]:
        """The knowledge graph's walked facts, as (subject, predicate's last segment, object)."""
        rows = self.rows(f"""SELECT ?s ?p ?o WHERE {{ GRAPH <{BASE}graph/{collection}> {{ ?s ?p ?o
            FILTER(!STRSTARTS(STR(?p), STR(rdfs:)) && !STRSTARTS(STR(?p), STR(skos:)) && !STRSTARTS(STR(?p),
              STR(owl:))) }} }}""")
        return {(r["s"], r["p"].rsplit("/", 1)[-1], r["o"]) for r in rows}

    def same_as(self, collection: str = "default") -> set[tuple[str, str]]:
        return {
            (r["a"], r["b"])
            for r in self.rows(f"SELECT ?a ?b WHERE {{ GRAPH <{BASE}graph/{collection}> {{ ?a owl:sameAs ?b }} }}")
        }

    def aliases(self, collection: str = "default") -> set[tuple[str, str]]:
        return {
            (r["e"], r["l"])
            for r in self.rows(f"SELECT ?e ?l WHERE {{ GRAPH <{BASE}graph/{collection}> {{ ?e skos:altLabel ?l }} }}")
        }

    def why(self, collection: str = "default") -> set[tuple[str, str, str, str]]:
        """Every merge as a user's SPARQL explains it: alias, target, rule, the evidence's document."""
        rows = self.rows(f"""SELECT ?a ?b ?rule ?doc WHERE {{ GRAPH <{BASE}graph/{collection}/source> {{
            ?m rdf:reifies <<( ?a owl:sameAs ?b )>> ; sr:rule ?rule ; sr:score ?score ; prov:wasDerivedFrom ?chunk .
            ?chunk prov:wasDerivedFrom ?doc }} }}""")
        return {(r["a"], r["b"], r["rule"], r["doc"].rsplit("/", 1)[-1]) for r in rows}


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[Kb]:
    store = EmbeddedStore(tmp_path / "store")
    services = Services.open(Settings(data_dir=tmp_path, base_iri=BASE, reranker_model=None), store)
    try:
        yield Kb(services, store)
    finally:
        services.close()
        store.close()


# -- the rules, on their own -----------------------------------------------------------------


# -- through the pipeline --------------------------------------------------------------------


@pytest.mark.parametrize("forgotten", ["life", "film"])  # either definition's document
def test_a_longer_form_of_a_name_in_another_document_joins_it_while_both_definitions_agree(
    kb: Kb, forgotten: str
) -> None:
    kb.ingest("film", "Robert Bradbury was an American film director. Robert Bradbury directed Riders of the Dawn.")
    kb.ingest("life", "Robert Nelson Bradbury was an American director of western films. He was born in Walla Walla.")
    kb.ingest("name", "Robert Nelson Bradbury sold the farm in Ohio.")  # names him, defines nothing
    kb.ingest("singer", "James Brown is an American singer known as the Godfather of Soul.")
    kb.ingest("cricket", "James Edward Brown is an English cricketer who played for Surrey.")
    whole, short = ID + "robert-nelson-bradbury", ID + "robert-bradbury"  # the IRI published first stays canonical
    assert (whole, short) in kb.same_as() and (short, "Robert Nelson Bradbury") in kb.aliases()
    (score,) = [
        float(r["score"])
        for r in kb.rows(f"""SELECT ?score WHERE {{ GRAPH <{BASE}graph/default/source> {{
        ?m rdf:reifies <<( <{whole}> owl:sameAs <{short}> )>> ; sr:rule "similar" ; sr:score ?score }} }}""")
    ]
    assert 0.75 <= score < 1.0
    assert not [
        pair for pair in kb.same_as() if ID + "james-brown" in pair
    ]  # a singer and a cricketer: the definitions differ
    assert {doc for alias, _, rule, doc in kb.why() if rule == "similar"} == {
        "film",
        "life",
    }  # both definitions, no mention
    kb.forget(forgotten)
    assert not kb.same_as() and not kb.aliases()
    if forgotten == "life":
        assert (short, "directed", ID + "riders-of-the-dawn") in kb.facts()
    assert (whole, "sold-farm-in", ID + "ohio") in kb.facts()  # written again: the name is its own thing once more


def test_a_full_name_takes_the_place_of_its_shorter_form_in_its_own_document_only(kb: Kb) -> None:
    kb.ingest("life", "Robert N. Bradbury was born in Walla Walla. Robert Bradbury directed Westward Ho.")
    kb.ingest("other", "Robert N. Bradbury sold the farm in Ohio.")
    short, whole = ID + "robert-bradbury", ID + "robert-n.-bradbury"
    assert (short, "was-born-in", ID + "walla-walla") in kb.facts() and (short, "Robert N. Bradbury") in kb.aliases()
    assert (whole, "sold-farm-in", ID + "ohio") in kb.facts()  # another document's full name: not evidence
    assert not kb.same_as() and kb.why() == {(whole, short, "partial", "life")}


def test_the_demo_corpus_has_one_node_for_the_w3c_explained_in_sparql(kb: Kb) -> None:
    corpus = ROOT / "sparqlrag" / "demo" / "corpus"
    for path in sorted(corpus.iterdir()):
        kb.ingest(path.name, path.read_text())
    w3c = ID + "world-wide-web-consortium"
    assert (ID + "w3c", w3c) in kb.same_as() and (ID + "rdf", ID + "resource-description-framework") in kb.same_as()
    assert (w3c, "W3C") in kb.aliases()
    assert (ID + "w3c", w3c, "acronym", "w3c.md") in kb.why()
    published = {o for s, p, o in kb.facts() if p == "published"}
    assert {s for s, p, _ in kb.facts() if p == "published"} == {w3c}  # "The W3C published ..." lands on the consortium
    assert ID + "resource-description-framework" in published and ID + "rdf" not in published
    assert not [f for f in kb.facts() if ID + "w3c" in (f[0], f[2])]  # the alias IRI carries nothing but owl:sameAs
    assert (w3c, "is-known-as", w3c) not in kb.facts()  # "X is known as the W3C" says nothing once they are one
    founders = {o for s, p, o in kb.facts() if s == ID + "tim-berners-lee" and p == "founded"}
    assert founders == {w3c}


def test_an_acronym_defined_later_moves_what_earlier_documents_said_and_forgetting_the_definition_undoes_it(
    kb: Kb,
) -> None:
    kb.ingest("uses", "The W3C published SPARQL in 2008.")
    assert (ID + "w3c", "published", ID + "sparql") in kb.facts()
    kb.ingest("defines", "The World Wide Web Consortium (W3C) is a standards body. Tim Berners-Lee founded the W3C.")
    w3c = ID + "world-wide-web-consortium"
    assert (w3c, "published", ID + "sparql") in kb.facts() and (
        ID + "w3c",
        "published",
        ID + "sparql",
    ) not in kb.facts()
    assert kb.why() == {(ID + "w3c", w3c, "acronym", "defines")}
    kb.forget("defines")
    assert (ID + "w3c", "published", ID + "sparql") in kb.facts()  # the only definition is gone: W3C is its own thing
    assert not kb.same_as() and not kb.aliases() and not kb.why()


def test_a_definition_in_the_same_batch_resolves_the_other_documents(kb: Kb) -> None:
    sources = [
        Source("uses", b"The W3C published SPARQL in 2008."),
        Source("defines", b"The World Wide Web Consortium (W3C) is a standards body."),
    ]
    asyncio.run(kb.services.pipeline.ingest_many(DEFAULT, sources))
    assert (ID + "world-wide-web-consortium", "published", ID + "sparql") in kb.facts()


def test_a_partial_name_holds_in_its_own_document_only(kb: Kb) -> None:
    kb.ingest("tim", "Tim Berners-Lee was born in London. Berners-Lee invented the World Wide Web.")
    kb.ingest("other", "Berners-Lee visited Geneva.")
    tim = ID + "tim-berners-lee"
    assert (tim, "invented", ID + "world-wide-web") in kb.facts() and (tim, "Berners-Lee") in kb.aliases()
    assert (ID + "berners-lee", "visited", ID + "geneva") in kb.facts()  # another document's Berners-Lee: not evidence
    assert not kb.same_as()  # nothing collection-wide is claimed...
    assert kb.why() == {(ID + "berners-lee", tim, "partial", "tim")}  # ...but the document's merge is explained


def _ontology_collection(kb: Kb, name: str = "places") -> None:
    kb.services.ontologies.load_sync(
        "schema", (TEST_DATA / "ontologies/schemaorg_subset.ttl").read_bytes(), filename="s.ttl"
    )
    assert asyncio.run(kb.services.collections.create(name, "schema"))


@pytest.mark.parametrize("typed_first", [True, False])
def test_the_typed_and_the_untyped_use_of_a_name_are_one_node(kb: Kb, typed_first: bool) -> None:
    _ontology_collection(kb)
    documents = [
        ("typed", "Hartford is a city in Connecticut."),
        ("untyped", "Mark Twain lived in Hartford for years."),
    ]
    for document_id, text in documents if typed_first else documents[::-1]:
        kb.ingest(document_id, text, "places")
    typed, untyped, twain = (
        f"{BASE}id/places/schema/City/hartford",
        f"{BASE}id/places/hartford",
        f"{BASE}id/places/mark-twain",
    )
    facts = kb.facts("places")
    assert (twain, "lived-in", typed) in facts and not [f for f in facts if untyped in (f[0], f[2])]
    if typed_first:  # the untyped IRI was never minted: nothing to keep resolvable
        assert not kb.same_as("places") and (typed, "Hartford") in kb.aliases("places")
    else:  # it was: it stays, as an alias, with the typing chunk as the evidence
        assert kb.same_as("places") == {(untyped, typed)} and kb.why("places") == {(untyped, typed, "typed", "typed")}
    kb.forget("typed", "places")
    assert (twain, "lived-in", untyped) in kb.facts("places") and not kb.same_as("places") and not kb.aliases("places")


def test_a_name_typed_by_two_classes_is_two_things(kb: Kb) -> None:
    _ontology_collection(kb)
    kb.ingest("country", "Georgia is a country in the Caucasus.", "places")
    kb.ingest("state", "Georgia is an administrative area of the United States.", "places")
    kb.ingest("city", "Tbilisi is a city in Georgia.", "places")
    types = kb.rows(
        f"SELECT ?e ?c WHERE {{ GRAPH <{BASE}graph/places> {{ ?e a ?c FILTER(CONTAINS(STR(?e), 'georgia')) }} }}"
    )
    assert {(r["e"].rsplit("/", 2)[-2], r["c"]) for r in types} == {
        ("Country", SCHEMA + "Country"),
        ("AdministrativeArea", SCHEMA + "AdministrativeArea"),
    }
    assert not kb.same_as("places")  # and the untyped Georgia of the third text joins neither


# -- curation ----------------------------------------------------------------------------------


def test_a_curated_split_survives_reingest_and_a_curated_merge_moves_facts(kb: Kb) -> None:
    curation = kb.services.curation
    kb.ingest("defines", "The World Wide Web Consortium (W3C) is a standards body. The W3C published SPARQL in 2008.")
    w3c = ID + "world-wide-web-consortium"
    found = asyncio.run(curation.aliases(DEFAULT, "W3C"))  # by a name: the alias finds its thing
    assert found.entity == w3c and [(m.alias, m.rule, m.documents) for m in found.merges] == [
        ("W3C", "acronym", ["defines"])
    ]
    split = asyncio.run(curation.split(DEFAULT, w3c, "W3C"))
    assert split.kept_apart == ["W3C"] and not split.aliases and not split.merges
    assert (ID + "w3c", "published", ID + "sparql") in kb.facts() and not kb.same_as()
    asyncio.run(
        kb.services.pipeline.ingest_many(
            DEFAULT, [asyncio.run(kb.services.pipeline.kept_source(DEFAULT, "defines"))], force=True
        )
    )
    kb.ingest(
        "again", "The World Wide Web Consortium (W3C) met in Boston."
    )  # new evidence: the person's decision stands
    assert not kb.same_as() and (ID + "w3c", "published", ID + "sparql") in kb.facts()
    assert ("curated",) == tuple(
        {
            r["rule"]
            for r in kb.rows(
                f"SELECT ?rule WHERE {{ GRAPH <{BASE}graph/default/source> {{ "
                f"?d rdf:reifies <<( ?a owl:differentFrom ?b )>> ; sr:rule ?rule }} }}"
            )
        }
    )

    merged = asyncio.run(curation.merge(DEFAULT, w3c, ID + "w3c"))  # the person changes their mind
    assert [(m.alias, m.rule, m.documents) for m in merged.merges] == [
        ("W3C", "acronym", ["again", "defines"]),
        ("W3C", "curated", []),
    ]
    assert not merged.kept_apart  # the split is undone: the texts' evidence counts again, beside the decision
    assert (w3c, "published", ID + "sparql") in kb.facts() and (ID + "w3c", w3c) in kb.same_as()
    kb.forget("defines")
    kb.forget("again")
    kb.ingest("later", "The W3C published RDF 1.2 in 2025.")  # no evidence left: the decision still resolves the name
    assert (w3c, "published", ID + "rdf") in kb.facts()


def test_a_curated_merge_keeps_its_first_entity_canonical_and_a_split_undoes_it(kb: Kb) -> None:
    """Two things of one document, equally strong claims (issue 37, item 1): the entity named
    first stays canonical with its name, and splitting the other off gives back every fact."""
    curation = kb.services.curation
    kb.ingest("two", "Acme Corp is based in Boston.\nGlobex Inc makes widgets in Springfield.")
    acme, globex = ID + "acme-corp", ID + "globex-inc"
    labels = f"SELECT ?e ?l WHERE {{ GRAPH <{BASE}graph/default> {{ ?e rdfs:label ?l }} }}"
    facts, named = kb.facts(), {(r["e"], r["l"]) for r in kb.rows(labels)}
    assert {(acme, "Acme Corp"), (globex, "Globex Inc")} <= named and any(f[0] == globex for f in facts)

    merged = asyncio.run(curation.merge(DEFAULT, "Acme Corp", "Globex Inc"))
    assert (merged.entity, merged.label) == (acme, "Acme Corp")
    assert [(m.alias, m.iri, m.rule) for m in merged.merges] == [("Globex Inc", globex, "curated")]
    assert kb.same_as() == {(globex, acme)} and (acme, "Globex Inc") in kb.aliases()
    assert kb.facts() == {(acme if s == globex else s, p, o) for s, p, o in facts}  # every fact moved onto acme
    assert (acme, "Acme Corp") in {(r["e"], r["l"]) for r in kb.rows(labels)}

    split = asyncio.run(curation.split(DEFAULT, "Acme Corp", "Globex Inc"))
    assert (split.entity, split.label, split.merges, split.kept_apart) == (acme, "Acme Corp", [], ["Globex Inc"])
    assert kb.facts() == facts and {(r["e"], r["l"]) for r in kb.rows(labels)} == named
    assert not kb.same_as() and not kb.aliases()


def test_curation_refuses_what_it_cannot_do_and_changes_nothing(kb: Kb) -> None:
    curation = kb.services.curation
    kb.ingest("a", "Marie Curie was born in Warsaw. Pierre Curie was born in Paris.")
    before = kb.rows(f"SELECT ?s ?p ?o WHERE {{ GRAPH <{BASE}graph/default> {{ ?s ?p ?o }} }}")
    with pytest.raises(UnknownEntity, match="no entity 'Einstein'"):
        asyncio.run(curation.merge(DEFAULT, "Marie Curie", "Einstein"))
    with pytest.raises(CurationRefused, match="one thing already"):
        asyncio.run(curation.merge(DEFAULT, "Warsaw", ID + "warsaw"))
    with pytest.raises(UnknownEntity, match="'Paris' is not an alias"):
        asyncio.run(curation.split(DEFAULT, "Warsaw", "Paris"))
    with pytest.raises(UnknownCollection):
        asyncio.run(curation.aliases(Iris(BASE, "nowhere"), "Warsaw"))
    assert kb.rows(f"SELECT ?s ?p ?o WHERE {{ GRAPH <{BASE}graph/default> {{ ?s ?p ?o }} }}") == before


def test_a_question_naming_an_alias_grounds_on_the_thing_it_names(kb: Kb) -> None:
    kb.ingest("defines", "The World Wide Web Consortium (W3C) is a standards body. The W3C published SPARQL in 2008.")
    walk = asyncio.run(kb.services.graph_rag.retrieve(DEFAULT, "What did the W3C publish?", mode="graph"))
    seeds = {seed.entity: seed.concept for seed in walk.seeds}
    assert ID + "w3c" not in seeds and "W3C" in seeds[ID + "world-wide-web-consortium"]  # the alias's vector found it
    assert any(lexical(e.fact.object) == ID + "sparql" for e in walk.edges)


@pytest.mark.parametrize("scorer", ["facts", "text"])
def test_an_edge_of_a_seed_named_by_an_alias_is_scored_as_the_question_words_it(kb: Kb, scorer: str) -> None:
    kb.ingest(
        "defines",
        "The North Atlantic Treaty Organization (NATO) is an alliance. NATO has member states including France.",
    )
    walk = asyncio.run(
        kb.services.graph_rag.retrieve(
            DEFAULT, "Which member states does NATO have?", GraphRagOptions(scorer=scorer), mode="graph"
        )
    )
    nato = ID + "north-atlantic-treaty-organization"
    assert [SeedView.traced(s).alias for s in walk.seeds if s.entity == nato] == ["NATO"]
    (edge,) = [e for e in walk.edges if lexical(e.fact.object) == ID + "france"]
    assert edge.labels[0] == "North Atlantic Treaty Organization"  # the trace still names the canonical node
    assert walk.grounding is not None
    as_stored = float((walk.grounding.concept_vectors @ unit(kb.services.embedder.embed([edge.text])).T).max())
    assert edge.relevance > as_stored + 0.05  # "NATO has member states including France" is nearer the question


def test_documents_of_one_batch_and_of_later_batches_resolve_alike(kb: Kb, tmp_path: Path) -> None:
    texts = {
        "a": "The Academy Awards honoured Federico Fellini.",
        "b": "Federico Fellini won an Academy Award in 1957.",
    }
    asyncio.run(kb.services.pipeline.ingest_many(DEFAULT, [Source(d, t.encode()) for d, t in texts.items()]))
    together = (kb.facts(), kb.same_as())
    for document_id in texts:
        kb.forget(document_id)
    for document_id, text in texts.items():
        kb.ingest(document_id, text)
    assert (kb.facts(), kb.same_as()) == together
    assert together[1] == {(ID + "academy-award", ID + "academy-awards")}  # the longer spelling is canonical
