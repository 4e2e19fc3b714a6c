"""The default answer path (issue 52): Document RAG's hybrid passages exactly, the graph's
bridges after them, labelled, and an offline answer made only of cited sentences that bear on
the question. Real parts: the offline pipeline into pyoxigraph on disk, the packaged MiniLM."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import pytest
from pyoxigraph import NamedNode

from sparqlrag.operations.access import EVERYTHING
from sparqlrag.retrieval.graph_synthesis import knowledge
from sparqlrag.retrieval.options import DocumentRagOptions, GraphRagOptions
from sparqlrag.retrieval.trace_json import read_trace
from sparqlrag.retrieval.views import FactView
from sparqlrag.retrieval.walk import GraphAnswer
from sparqlrag.server.mcp_servers import McpServers
from sparqlrag.services import Services
from sparqlrag.store import vocab
from sparqlrag.store.vocab import SPARQL_PREFIXES, Iris
from tests.ingested import ingested

BASE = "http://kb.example/"
DEFAULT = Iris(BASE)  # the default collection's IRIs
IRIS = Iris(BASE)
REPORT = "Fjellberg Marine reported revenue of 412 million euros in 2024. Its shipyard in Bergen employs 900 people."
DOCS = {
    "curie": "Marie Curie was born in Warsaw. Marie Curie worked at the Sorbonne.",
    "warsaw": "Warsaw is the capital of Poland. The Vistula flows through Warsaw. Warsaw hosted the 1955 festival.",
    "poland": "Poland borders Germany. Poland joined the European Union in 2004.",
    "sorbonne": "The Sorbonne is a university in Paris. Paris is the capital of France.",
    "lighthouse": "James Douglass designed the Fastnet Lighthouse. The Fastnet Lighthouse stands on Fastnet Rock.",
    "bread": "Sourdough bread is baked from flour and a fermented starter.",
    "report-pdf": REPORT,
    "report-html": REPORT,  # the same report, twice
}
QUESTIONS = ["Where was Marie Curie born?", "Who designed the Fastnet Lighthouse?", "What flows through Warsaw?"]
FOAF_NAME = NamedNode("http://xmlns.com/foaf/0.1/name")
CITED = re.compile(r"(.+?) \[([^\]]+)\](?: |$)")


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    with ingested(tmp_path_factory.mktemp("evidence"), BASE, DOCS) as services:
        yield services


def answer(services: Services, question: str, **options: int) -> GraphAnswer:
    return asyncio.run(services.graph_rag.answer(DEFAULT, question, GraphRagOptions(**options)))


@pytest.mark.parametrize("k", [1, 3, 5])
def test_the_defaults_first_k_sources_are_document_rags_hybrid_k(services: Services, k: int) -> None:
    for question in QUESTIONS:
        hybrid = asyncio.run(services.document_rag.retrieve(DEFAULT, question, DocumentRagOptions(k=k)))
        given = answer(services, question, k=k).passages
        assert [p.chunk for p in given[:k]] == [p.chunk for p in hybrid], question
        assert all(p.bridge for p in given[k:]) and len(given) <= k + GraphRagOptions().bridges


def test_bridges_come_after_the_k_passages_and_say_which_facts_brought_them(services: Services) -> None:
    found = answer(services, "Where was Marie Curie born?", k=1, bridges=2)
    first, bridges = found.passages[0], found.passages[1:]
    assert not first.bridge and bridges, "a one-passage answer over this graph has passages to bridge to"
    kept = {e.fact for e in found.edges}
    for bridge in bridges:
        assert bridge.bridge[-1] in kept and bridge.supports == bridge.bridge[-1]  # the path ends in a kept fact
        assert all(fact in kept for fact in bridge.bridge)
    trace = read_trace(services.store, IRIS, found.trace.rsplit("/", 1)[-1])
    assert trace is not None and [s.bridge for s in trace.sources] == [False] + [True] * len(bridges)
    paths = [[FactView.of(f) for f in sorted(p.bridge, key=str)] for p in found.passages]
    answered = found.view().sources
    assert [s.bridged_by for s in answered] == [s.bridged_by for s in trace.sources]  # each fact named alike
    assert [[FactView(**f.model_dump(exclude={"text"})) for f in s.bridged_by] for s in answered] == paths
    none = answer(services, "Where was Marie Curie born?", k=1, bridges=0)
    assert [p.chunk for p in none.passages] == [first.chunk]


def test_the_llm_is_given_the_passages_then_the_bridges_and_facts_each_labelled(services: Services) -> None:
    options = GraphRagOptions(k=1, bridges=2)
    walk = asyncio.run(services.graph_rag.retrieve(DEFAULT, "Where was Marie Curie born?", options, "evidence"))
    told, bridges = knowledge(walk), walk.passages[1:]
    assert bridges and told.index("Passages:\n[1] (curie)") < told.index("Bridge passages") < told.index("Facts from")
    texts = {e.fact: e.text for e in walk.edges}
    for number, bridge in enumerate(bridges, start=2):
        assert (
            f"[{number}] ({bridge.citation}; reached through: {' -> '.join(texts[f] for f in bridge.bridge)}) " in told
        )


def test_every_sentence_of_the_offline_answer_is_cited_and_comes_from_what_it_cites(services: Services) -> None:
    for question in [*QUESTIONS, "Where did Marie Curie work, and where is that?"]:
        found = answer(services, question)
        said = CITED.findall(found.answer)
        assert said and "".join(f"{s} [{c}] " for s, c in said).strip() == found.answer.strip(), found.answer
        assert len(found.answer) <= 400 or len(said) == 1
        for sentence, citation in said:
            if citation.startswith("fact "):
                assert found.edges[int(citation.removeprefix("fact ")) - 1].sentence_text == sentence
            else:
                assert all(sentence in found.passages[int(n) - 1].text for n in citation.split(", ")), citation


def test_what_the_walk_reaches_that_does_not_bear_on_the_question_is_not_said(services: Services) -> None:
    found = answer(services, "Where was Marie Curie born?")
    walked = {e.sentence_text for e in found.edges}
    assert {"The Vistula flows through Warsaw.", "Poland borders Germany."} & walked or any(
        e.hop == 2 for e in found.edges
    ), "the walk goes on past Warsaw"
    assert "Marie Curie was born in Warsaw." in found.answer
    for unrelated in ("Vistula", "Germany", "festival", "European Union", "Sourdough"):
        assert unrelated not in found.answer


def test_a_multi_part_question_has_each_part_answered(services: Services) -> None:
    found = answer(services, "Where did Marie Curie work, and where is that?")
    assert "Marie Curie worked at the Sorbonne." in found.answer and "Paris" in found.answer


def test_the_same_text_in_two_documents_is_one_source_naming_both(services: Services) -> None:
    question = "How many people does the Fjellberg Marine shipyard employ?"
    passages = asyncio.run(services.document_rag.retrieve(DEFAULT, question, DocumentRagOptions(k=3)))
    reports = [p for p in passages if p.title.startswith("report-")]
    assert len(reports) == 1 and len(passages) == 3
    assert [title for _, title in reports[0].copies] == [({"report-pdf", "report-html"} - {reports[0].title}).pop()]
    found = answer(services, question, k=3)
    assert sum(p.title.startswith("report-") for p in found.passages) == 1
    shown = found.view().as_json()["sources"][[p.title for p in found.passages].index(reports[0].title)]
    assert [c["title"] for c in shown["copies"]] == [title for _, title in reports[0].copies]


def test_a_co_occurrence_gives_way_to_the_relation_stated_between_the_same_two(services: Services) -> None:
    found = answer(services, "Who designed the Fastnet Lighthouse?")
    pairs = {frozenset((e.fact.subject, e.fact.object)) for e in found.edges if e.fact.predicate != vocab.SR_COOCCURS}
    assert pairs, "the offline extractor states relations here"
    for edge in found.edges:
        if edge.fact.predicate == vocab.SR_COOCCURS:
            assert frozenset((edge.fact.subject, edge.fact.object)) not in pairs, edge.text
    assert found.answer.startswith("James Douglass designed the Fastnet Lighthouse.")


def test_a_loaded_graphs_names_are_not_facts_to_walk_or_recite(services: Services) -> None:
    alice, bob = "http://people.example/alice", "http://people.example/bob"
    services.store.update(
        SPARQL_PREFIXES
        + f"""PREFIX foaf: <http://xmlns.com/foaf/0.1/> INSERT DATA {{ GRAPH <{IRIS.knowledge_graph.value}> {{
        <{alice}> foaf:name "Alice Smith" ; foaf:knows <{bob}> . <{bob}> foaf:name "Bob Jones" }} }}"""
    )
    asyncio.run(services.indexer.index_graph(DEFAULT))
    found = answer(services, "Who does Alice Smith know?")
    assert all(e.fact.predicate != FOAF_NAME for e in found.edges)
    assert "Alice Smith knows Bob Jones." in found.answer and "name Alice Smith" not in found.answer


def test_mcp_labels_each_bridge_with_the_facts_that_brought_it(services: Services) -> None:
    servers = McpServers(BASE, lambda: services, lambda context: EVERYTHING)
    told = asyncio.run(servers.ask("Where was Marie Curie born?", None, mode="default"))  # type: ignore[arg-type]
    found = answer(services, "Where was Marie Curie born?")
    assert [s["chunk"] for s in told["sources"]] == [p.chunk for p in found.passages]
    texts = {e.fact: e.text for e in found.edges}
    bridged = [s.get("bridged_by") for s in told["sources"]]
    assert bridged == [[texts[f] for f in p.bridge] if p.bridge else None for p in found.passages]
    assert any(bridged), "five passages of eight leave some to bridge to"
