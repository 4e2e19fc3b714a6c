"""Graph RAG on real parts: documents ingested by the offline pipeline into pyoxigraph on disk,
local vectors and the packaged MiniLM; the LLM path through the real `anthropic` client and the stub."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyoxigraph import NamedNode, RdfFormat, Triple

from sparqlrag.config import Settings
from sparqlrag.extraction.knowledge import Knowledge
from sparqlrag.retrieval.graph_rag import GraphRag
from sparqlrag.retrieval.options import DocumentRagOptions, GraphRagOptions
from sparqlrag.retrieval.question import EmptyGraph
from sparqlrag.retrieval.trace_json import read_trace
from sparqlrag.retrieval.views import FactView
from sparqlrag.retrieval.walk import Retrieval
from sparqlrag.services import Models, Services
from sparqlrag.store import EmbeddedStore
from sparqlrag.store.select import lexical, select
from sparqlrag.store.sparql_text import sparql_term
from sparqlrag.store.vocab import SPARQL_PREFIXES, Iris
from tests.ingested import ingested
from tests.llm_stub import Reply, stubbed_llm

BASE = "http://kb.example/"
DEFAULT = Iris(BASE)  # the default collection's IRIs
DOCS = {
    "curie": "Marie Curie was born in Warsaw. Marie Curie worked at the Sorbonne.",
    "warsaw": "Warsaw is the capital of Poland. The Vistula flows through Warsaw.",
    "sorbonne": "The Sorbonne is a university in Paris.",
    "bread": "Sourdough bread is baked from flour and a fermented starter.",
}
IRIS = Iris(BASE)


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    with ingested(tmp_path_factory.mktemp("graph-rag"), BASE, DOCS) as services:
        curie, kg = IRIS.entity("Marie Curie").value, IRIS.knowledge_graph.value
        services.store.update(f"""INSERT DATA {{ GRAPH <{kg}> {{ <{curie}> a <http://schema.org/Person> ;
            <http://www.w3.org/2002/07/owl#sameAs> <http://www.wikidata.org/entity/Q7186> }} }}""")  # schema edges
        yield services


def rag(services: Services) -> GraphRag:
    return services.graph_rag


def entity(name: str) -> str:
    return IRIS.entity(name).value


def test_seeds_ground_on_the_names_in_the_question(services: Services) -> None:
    walk = asyncio.run(rag(services).retrieve(DEFAULT, "Where was Marie Curie born?", mode="graph"))
    assert walk.concepts[0] == "Where was Marie Curie born?" and "Marie Curie" in walk.concepts
    assert walk.seeds[0].entity == entity("Marie Curie") and walk.seeds[0].concept == "Marie Curie"
    assert [s.score for s in walk.seeds] == sorted((s.score for s in walk.seeds), reverse=True)


def test_two_hops_reach_the_country_and_schema_edges_are_dropped(services: Services) -> None:
    options = GraphRagOptions(entity_limit=1, fact_seeds=0)  # start from Marie Curie alone
    walk = asyncio.run(rag(services).retrieve(DEFAULT, "In which country was Marie Curie born?", options, mode="graph"))
    assert [s.entity for s in walk.seeds] == [entity("Marie Curie")]
    facts = {(e.hop, lexical(e.fact.subject), e.labels[1], lexical(e.fact.object)) for e in walk.edges}
    assert (1, entity("Marie Curie"), "was born in", entity("Warsaw")) in facts
    assert (2, entity("Warsaw"), "is capital of", entity("Poland")) in facts  # reached only through Warsaw
    capital = next(e for e in walk.edges if e.hop == 2 and e.labels[1] == "is capital of")
    assert capital.via is not None and lexical(capital.via.fact.object) == entity("Warsaw")  # the path is kept
    assert (
        capital.path_text == f"{capital.via.text}. {capital.text}"
        and (via := capital.view().via) is not None
        and via.text == capital.via.text
    )
    assert (
        capital.concept == walk.trace.question
    )  # a path is scored against the question, a first hop against the concepts
    assert {e.concept for e in walk.edges if e.hop == 1} <= set(walk.concepts)
    predicates = {e.fact.predicate.value for e in walk.edges}
    assert not any(
        p.startswith(
            (
                "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
                "http://www.w3.org/2000/01/rdf-schema#",
                "http://www.w3.org/2002/07/owl#",
            )
        )
        for p in predicates
    )
    assert walk.edges == sorted(walk.edges, key=lambda e: -e.score)


def test_the_questions_nearest_facts_seed_the_walk_and_are_traced(services: Services) -> None:
    """HippoRAG 2's query-to-fact step: the facts nearest the question seed the walk with their
    ends, each at its fact's score, beside the entities the question names."""
    question = "Which river flows through Warsaw?"
    walk = asyncio.run(rag(services).retrieve(DEFAULT, question, GraphRagOptions(entity_limit=1), mode="graph"))
    by_fact = [s for s in walk.seeds if s.fact is not None]
    assert by_fact and all(s.concept == question for s in by_fact)
    vistula = next(s for s in by_fact if s.entity == entity("Vistula"))
    assert vistula.fact == Triple(
        NamedNode(entity("Vistula")), IRIS.predicate("flows through"), NamedNode(entity("Warsaw"))
    )
    assert len(walk.seeds) > 1  # entity_limit bounds the concepts' seeds; the facts add theirs
    none = asyncio.run(
        rag(services).retrieve(DEFAULT, question, GraphRagOptions(entity_limit=1, fact_seeds=0), mode="graph")
    )
    assert [s.fact for s in none.seeds] == [None]
    answer = asyncio.run(rag(services).answer(DEFAULT, question))
    traced = read_trace(services.store, IRIS, answer.trace.rsplit("/", 1)[1])
    assert traced is not None and any(s.fact and s.fact.subject == entity("Vistula") for s in traced.seeds)


def test_limits_are_honoured(services: Services) -> None:
    question = "In which country was Marie Curie born?"
    narrow = asyncio.run(
        rag(services).retrieve(
            DEFAULT,
            question,
            GraphRagOptions(entity_limit=4, max_path_length=1, edge_limit=1, fact_seeds=0),
            mode="graph",
        )
    )
    assert 2 <= len(narrow.seeds) <= 4  # two concepts (the question, "Marie Curie"), two seeds each, deduplicated
    assert len(narrow.edges) == 1 and narrow.edges[0].hop == 1  # edge_limit=1: the best edge alone
    capped = asyncio.run(
        rag(services).retrieve(
            DEFAULT,
            question,
            GraphRagOptions(entity_limit=1, triple_limit=1, max_path_length=1, fact_seeds=0),
            mode="graph",
        )
    )
    assert 1 <= capped.explored <= 2  # one seed: at most one edge as subject, one as object
    scored = asyncio.run(
        rag(services).retrieve(
            DEFAULT, question, GraphRagOptions(max_reranker_input=3, max_path_length=1), mode="graph"
        )
    )
    assert scored.explored == 3
    passages = asyncio.run(rag(services).retrieve(DEFAULT, question, GraphRagOptions(k=1), mode="graph"))
    assert len(passages.passages) == 1
    for bad in (
        {"edge_limit": 0},
        {"max_path_length": 6},
        {"k": "5"},
        {"entity_limit": True},
        {"fact_seeds": -1},
        {"scorer": "labels"},
    ):
        with pytest.raises(ValueError, match=next(iter(bad))):
            GraphRagOptions(**bad)


def test_sources_are_chunks_of_scored_edges_and_name_the_fact_they_support(services: Services) -> None:
    walk = asyncio.run(
        rag(services).retrieve(
            DEFAULT,
            "Where was Marie Curie born?",
            GraphRagOptions(entity_limit=1, max_path_length=1, fact_seeds=0),
            mode="graph",
        )
    )
    born = next(e for e in walk.edges if e.labels[1] == "was born in")
    assert born.statement and born.sentence == "Marie Curie was born in Warsaw."
    assert all(chunk.startswith(IRIS.document("curie").value + "/chunk/") for chunk in born.chunks)
    first = walk.passages[0]  # all edges of one seed are kept here: the first passage's best is among them
    assert (
        first.title == "curie"
        and first.supports == max((e for e in walk.edges if first.chunk in e.chunks), key=lambda e: e.score).fact
    )
    for passage in walk.passages:  # a fact a passage names leads to it by its own provenance
        assert passage.supports is None or _derived_from(services, passage.supports, passage.chunk)
    # the kept edges lead the walk on; any scored edge may lift its chunks
    narrow = asyncio.run(
        rag(services).retrieve(
            DEFAULT,
            "What is Warsaw?",
            GraphRagOptions(entity_limit=1, max_path_length=1, edge_limit=1, k=4, fact_seeds=0),
            mode="graph",
        )
    )
    assert len(narrow.edges) == 1 and narrow.explored > 1
    assert {p.supports for p in narrow.passages if p.supports} > {e.fact for e in narrow.edges}


def _derived_from(services: Services, fact: Triple, chunk: str) -> bool:
    rows = select(
        services.store,
        SPARQL_PREFIXES
        + f"""SELECT ?st WHERE {{ GRAPH <{IRIS.source_graph.value}> {{
        ?st rdf:reifies {sparql_term(fact)} ; prov:wasDerivedFrom <{chunk}> }} }}""",
    )
    return bool(rows)


def test_answer_writes_a_complete_trace_that_sparql_can_read(services: Services) -> None:
    answer = asyncio.run(rag(services).answer(DEFAULT, "Where was Marie Curie born?"))
    assert "Marie Curie was born in Warsaw. [1]" in answer.answer and answer.model is None
    store, trace = services.store, NamedNode(answer.trace)
    rows = select(
        store,
        SPARQL_PREFIXES
        + f"""SELECT ?question ?explored (COUNT(DISTINCT ?concept) AS ?concepts)
        (COUNT(DISTINCT ?seed) AS ?seeds) (COUNT(DISTINCT ?edge) AS ?edges) (COUNT(DISTINCT ?source) AS ?sources)
        (COUNT(DISTINCT ?step) AS ?steps) WHERE {{ GRAPH <{IRIS.trace_graph.value}> {{
          <{trace.value}> sr:question ?question ; sr:exploredEdges ?explored ; sr:concept ?concept ; sr:seed ?seed ;
            sr:selectedEdge ?edge ; sr:source ?source ; sr:step ?step ; sr:answer ?answer ; sr:durationMs ?ms . }} }}
        GROUP BY ?question ?explored""",
    )
    (row,) = rows
    assert row["question"] == "Where was Marie Curie born?" and int(row["explored"]) == answer.explored
    assert (int(row["concepts"]), int(row["seeds"]), int(row["edges"])) == (
        len(answer.concepts),
        len(answer.seeds),
        len(answer.edges),
    )
    assert int(row["sources"]) == len(answer.passages)
    traced = read_trace(store, IRIS, answer.trace.rsplit("/", 1)[-1])
    assert traced is not None
    assert [s.supports for s in traced.sources] == [
        FactView.of(p.supports) if p.supports else None for p in answer.passages
    ]
    steps = select(
        store,
        SPARQL_PREFIXES
        + f"""SELECT ?name WHERE {{ GRAPH ?g {{ <{trace.value}> sr:step ?s .
        ?s rdfs:label ?name ; sr:index ?i ; sr:durationMs ?ms }} }} ORDER BY ?i""",
    )
    names = [s["name"] for s in steps]
    assert names[:3] == ["concepts", "grounding", "hop 1"]
    assert names[-4:] == ["sources", "passages", "bridges", "synthesis"]  # the default mode's
    assert all(name.startswith("hop ") for name in names[2:-4]) and int(row["steps"]) == len(names)
    # each edge past the first hop names the fact that led to it, itself a selected edge: the path
    (paths,) = select(
        store,
        SPARQL_PREFIXES
        + f"""SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH ?g {{ <{trace.value}> sr:selectedEdge ?edge .
        ?edge sr:via ?via . <{trace.value}> sr:selectedEdge ?prior . ?prior sr:fact ?via }} }}""",
    )
    assert int(paths["n"]) == sum(e.via is not None for e in answer.edges) > 0
    # "which documents did this answer rely on?", in SPARQL alone (over the union of the graphs,
    # as the server answers), through the statements it used
    result = store.query(
        SPARQL_PREFIXES
        + f"""SELECT DISTINCT ?title WHERE {{
        ?trace sr:answer {_literal(answer.answer)} ; sr:selectedEdge/sr:statement ?statement .
        ?statement prov:wasDerivedFrom/prov:wasDerivedFrom ?doc . ?doc dcterms:title ?title }}""",
        accept="application/sparql-results+json",
        union_default_graph=True,
    )
    titles = {row["title"]["value"] for row in json.loads(result.body)["results"]["bindings"]}
    assert "curie" in titles and "bread" not in titles


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def test_injection_in_the_question_changes_nothing_but_the_trace(services: Services) -> None:
    def snapshot() -> list[bytes]:
        out = io.BytesIO()
        services.store.dump(out, RdfFormat.N_QUADS)  # type: ignore[arg-type]
        return sorted(line for line in out.getvalue().splitlines() if b"/trace" not in line)

    before = snapshot()
    for question in [
        'Marie Curie" } } ; DROP ALL ; INSERT DATA { <x:a> <x:b> <x:c> } #',
        "Warsaw> ?p ?o } DELETE WHERE { ?s ?p ?o",
        "Curie\\u0022 ) } ; CLEAR ALL",
    ]:
        answer = asyncio.run(rag(services).answer(DEFAULT, question))
        assert answer.trace and answer.seeds
        stored = select(
            services.store, SPARQL_PREFIXES + f"SELECT ?q WHERE {{ GRAPH ?g {{ <{answer.trace}> sr:question ?q }} }}"
        )
        assert [r["q"] for r in stored] == [question]
    assert snapshot() == before


def test_empty_graph_and_oversized_question_are_clear_errors(services: Services) -> None:
    asyncio.run(services.collections.create("empty"))
    try:
        with pytest.raises(EmptyGraph, match="no entities"):
            asyncio.run(rag(services).answer(Iris(BASE, "empty"), "Where was Marie Curie born?", mode="graph"))
    finally:  # the module's fixture as the other tests expect it
        asyncio.run(services.collections.delete("empty"))
    with pytest.raises(ValueError, match="mode"):
        asyncio.run(rag(services).answer(DEFAULT, "Where was Marie Curie born?", mode="walk"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit is 2000"):
        asyncio.run(rag(services).answer(DEFAULT, "why " * 600))
    with pytest.raises(ValueError, match="non-empty"):
        asyncio.run(rag(services).answer(DEFAULT, "  "))


class NoKnowledge:
    """An extractor that finds nothing: documents with passages and no knowledge graph."""

    name, llm_name = "none", None

    async def extract(self, text: str, document_id: str) -> Knowledge:
        return Knowledge()


def test_with_no_knowledge_graph_the_default_mode_is_document_rags_hybrid(services: Services, tmp_path: Path) -> None:
    """Graph evidence re-ranks the document candidates: with no graph to walk, the default mode
    returns exactly Document RAG's hybrid ranking and answers from those passages; graph mode
    has nothing to walk."""
    models = Models(services.embedder, services.graph_rag.reranker, None)
    plain = Services.open(
        Settings(data_dir=tmp_path, base_iri=BASE, reranker_model=None),
        EmbeddedStore(tmp_path / "store"),
        NoKnowledge(),
        models,
    )
    try:
        for name, text in DOCS.items():
            asyncio.run(plain.pipeline.ingest(DEFAULT, name, text.encode(), title=name))
        question = "Which river flows through Warsaw?"
        answer = asyncio.run(plain.graph_rag.answer(DEFAULT, question, GraphRagOptions(k=3)))
        hybrid = asyncio.run(plain.document_rag.retrieve(DEFAULT, question, DocumentRagOptions(mode="hybrid", k=3)))
        assert [p.chunk for p in answer.passages] == [p.chunk for p in hybrid] and not answer.edges and not answer.seeds
        assert "The Vistula flows through Warsaw. [1]" in answer.answer  # from the passages
        with pytest.raises(EmptyGraph):
            asyncio.run(plain.graph_rag.retrieve(DEFAULT, question, GraphRagOptions(k=3), mode="graph"))
    finally:
        plain.close()
        plain.store.close()
    with_graph = asyncio.run(rag(services).retrieve(DEFAULT, question, GraphRagOptions(k=3), mode="graph"))
    assert (
        with_graph.passages[0].title == "warsaw" and with_graph.passages[0].supports is not None
    )  # lifted by its fact


def test_llm_concepts_reasoning_and_streamed_synthesis(services: Services) -> None:
    graph = rag(services)

    async def collect() -> list[tuple[str, dict]]:
        options = GraphRagOptions(reasoning=True, max_path_length=1, entity_limit=4)
        return [event async for event in graph.stream(DEFAULT, "Where was Marie Curie born?", options)]

    replies = (
        Reply('Concepts: ```json\n["Marie Curie", "birthplace"]\n```', input_tokens=30, output_tokens=8),
        Reply(
            '[{"id": 1, "reasoning": "It names her birthplace."}, {"id": 99, "reasoning": "no such fact"}]',
            input_tokens=50,
            output_tokens=12,
        ),
        Reply("[1]", input_tokens=40, output_tokens=2),  # recognition memory keeps the nearest fact
        Reply("Marie Curie was born in Warsaw [1].", input_tokens=80, output_tokens=9),
    )
    with stubbed_llm(graph, *replies) as stub:
        events = asyncio.run(collect())
    names = [name for name, _ in events]
    assert names[:3] == ["concepts", "seeds", "hop"] and names[3] == "edges" and names[-2:] == ["sources", "done"]
    assert names.count("token") > 2 and set(names[4:-2]) == {"token"}
    assert events[0][1]["concepts"] == ["Marie Curie", "birthplace"]
    edges = events[3][1]["edges"]
    assert edges[0]["reasoning"] == "It names her birthplace." and all(e["reasoning"] is None for e in edges[1:])
    done = events[-1][1]
    assert done["answer"] == "Marie Curie was born in Warsaw [1]." and done["model"] == "anthropic:claude-test"
    assert done["usage"]["input_tokens"] == 120  # concepts, reasoning, recognition (30 + 50 + 40); streaming: none
    assert "Question:\nWhere was Marie Curie born?" in stub.requests[2]["messages"][0]["content"]
    synthesis_prompt = stub.requests[3]["messages"][0]["content"]
    assert "Facts from the knowledge graph:" in synthesis_prompt and "[1] (curie)" in synthesis_prompt
    passages, facts = synthesis_prompt.index("Passages:"), synthesis_prompt.index("Facts from the knowledge graph:")
    assert passages < synthesis_prompt.index("[1] (curie)") < facts  # the passages first


def test_recognition_memory_chooses_the_facts_pagerank_starts_from(services: Services) -> None:
    """With an LLM, the question's nearest facts pass its filter first (HippoRAG 2): the entities
    of the facts it keeps seed PageRank; keeping none leaves Document RAG's hybrid ranking; an
    answer it cannot read keeps them all."""
    graph, question = rag(services), "Where was Marie Curie born?"
    concepts = Reply('["Marie Curie"]')

    def walk(reply: Reply) -> Retrieval:
        with stubbed_llm(graph, concepts, reply):
            return asyncio.run(graph.retrieve(DEFAULT, question, GraphRagOptions(k=3), mode="pagerank"))

    first = walk(Reply("[1]"))
    kept = first.grounding.near_facts[0].fact
    assert first.ranking is not None and first.ranking.seeds
    assert {s.entity for s in first.ranking.seeds} <= {lexical(kept.subject), lexical(kept.object)}
    assert first.trace.steps.keys() >= {"recognition", "pagerank"}
    none = walk(Reply("[]"))
    hybrid = asyncio.run(services.document_rag.retrieve(DEFAULT, question, DocumentRagOptions(mode="hybrid", k=3)))
    assert none.ranking is not None and none.ranking.seeds == []
    assert [p.chunk for p in none.passages] == [p.chunk for p in hybrid]
    unreadable = walk(Reply("I cannot tell."))
    assert unreadable.ranking is not None
    assert {s.entity for s in unreadable.ranking.seeds} >= {s.entity for s in first.ranking.seeds}


def test_the_text_scorer_walks_the_same_graph(services: Services) -> None:
    """Scoring each path's text now (a model run per candidate) instead of the fact index."""
    options = GraphRagOptions(entity_limit=1, fact_seeds=0, scorer="text")
    walk = asyncio.run(rag(services).retrieve(DEFAULT, "In which country was Marie Curie born?", options, mode="graph"))
    facts = {(e.hop, lexical(e.fact.subject), e.labels[1], lexical(e.fact.object)) for e in walk.edges}
    assert (1, entity("Marie Curie"), "was born in", entity("Warsaw")) in facts
    assert (2, entity("Warsaw"), "is capital of", entity("Poland")) in facts
    assert all(
        0 < e.relevance <= 1.0 + 1e-6 and e.score == pytest.approx((e.relevance + 1.0) / 2)
        for e in walk.edges
        if e.hop == 1
    )
    with pytest.raises(ValueError, match="scorer"):
        GraphRagOptions(scorer="psychic")
