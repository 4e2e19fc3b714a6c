"""Document RAG over ingested documents: the three modes, rerank, MMR, extractive and LLM answers, trace."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from sparqlrag.config import Settings
from sparqlrag.extraction.offline import OfflineExtractor
from sparqlrag.models.embedder import Embedder
from sparqlrag.models.reranker import CosineReranker
from sparqlrag.retrieval.document_rag import DocumentRag
from sparqlrag.retrieval.options import DocumentRagOptions as Options
from sparqlrag.retrieval.trace_json import read_trace
from sparqlrag.services import Models, Services
from sparqlrag.store import EmbeddedStore
from sparqlrag.store.select import select
from sparqlrag.store.vocab import SPARQL_PREFIXES, Iris
from tests.llm_stub import Reply, stubbed_llm

BASE = "http://kb.example/"
DEFAULT = Iris(BASE)  # the default collection's IRIs
DOCS = {
    "curie": "Marie Curie was born in Warsaw. She won the Nobel Prize in Physics in 1903 and in Chemistry in 1911.",
    "eiffel": "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was completed in 1889.",
    "bread": "Bread is baked from flour, water, salt and yeast. Sourdough uses a fermented starter.",
    "vistula": "The Vistula is the longest river in Poland. It flows through Krakow and Warsaw.",
    # two near copies and a third passage on the same question: what MMR is for
    "niagara": "Niagara Falls lies on the border of Canada and the United States.",
    "niagara-copy": "Niagara Falls lies on the border between Canada and the United States.",
    "victoria": "Victoria Falls lies on the border of Zambia and Zimbabwe.",
}


@pytest.fixture(scope="module")
def rag(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocumentRag]:
    """Document RAG as the server builds it (Services.open), on the documents above."""
    root = tmp_path_factory.mktemp("rag")
    embedder = Embedder(models_dir=root / "models")
    store = EmbeddedStore(root / "store")
    settings = Settings(data_dir=root, base_iri=BASE, reranker_model=None)
    services = Services.open(settings, store, OfflineExtractor(), Models(embedder, CosineReranker(embedder), None))
    for document_id, text in DOCS.items():
        asyncio.run(services.pipeline.ingest(DEFAULT, document_id, text.encode(), title=document_id))
    yield services.document_rag
    services.close()
    store.close()


def titles(passages: list) -> list[str]:
    return [p.title for p in passages]


@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
def test_each_mode_finds_the_right_passage(rag: DocumentRag, mode: str) -> None:
    passages = asyncio.run(rag.retrieve(DEFAULT, "Where was Marie Curie born?", Options(mode=mode, k=2)))
    assert titles(passages)[0] == "curie"
    assert passages[0].text == DOCS["curie"] and passages[0].score > 0


def test_rerank_and_mmr_options(rag: DocumentRag) -> None:
    reranked = asyncio.run(rag.retrieve(DEFAULT, "Which river flows through Warsaw?", Options(k=2, rerank=True)))
    assert titles(reranked)[0] == "vistula"
    question = "Which waterfalls lie on a border?"
    assert set(titles(asyncio.run(rag.retrieve(DEFAULT, question, Options(k=2, mode="vector"))))) == {
        "niagara",
        "niagara-copy",
    }
    diverse = asyncio.run(rag.retrieve(DEFAULT, question, Options(k=2, mode="vector", mmr=0.5)))
    assert titles(diverse)[1] == "victoria"  # the copy adds nothing the first passage did not say
    with pytest.raises(ValueError, match="mode"):
        Options(mode="psychic")
    assert asyncio.run(rag.retrieve(Iris(BASE, "empty-collection"), "Warsaw")) == []


def test_extractive_answer_and_trace(rag: DocumentRag) -> None:
    answer = asyncio.run(rag.answer(DEFAULT, "When was the Eiffel Tower completed?", Options(k=3)))
    assert "It was completed in 1889. [1]" in answer.answer and answer.model is None
    iris = Iris(BASE)
    rows = select(
        rag.store,
        SPARQL_PREFIXES
        + f"""SELECT ?question ?mode ?chunk ?rank WHERE {{
        GRAPH <{iris.trace_graph.value}> {{ <{answer.trace}> a sr:Trace ; sr:question ?question ; sr:mode ?mode ;
          sr:source [ sr:chunk ?chunk ; sr:rank ?rank ] }} }} ORDER BY ?rank""",
    )
    assert rows[0]["question"] == "When was the Eiffel Tower completed?" and rows[0]["mode"] == "document-rag/hybrid"
    assert [r["chunk"] for r in rows] == [p.chunk for p in answer.passages]
    traced = read_trace(rag.store, iris, answer.trace.rsplit("/", 1)[1])
    assert traced is not None and [step.name for step in traced.steps] == ["retrieval", "synthesis"]
    assert all(step.ms and step.ms > 0 for step in traced.steps)
    assert traced.scorer == f"rrf(cosine:{rag.embedder.model_name}, bm25)"


def test_llm_answer_through_the_stub(rag: DocumentRag) -> None:
    with stubbed_llm(rag, Reply("Marie Curie was born in Warsaw [1].", input_tokens=120, output_tokens=9)) as stub:
        answer = asyncio.run(rag.answer(DEFAULT, "Where was Marie Curie born?", Options(k=2)))
    assert answer.answer == "Marie Curie was born in Warsaw [1]." and answer.usage == {
        "input_tokens": 120,
        "output_tokens": 9,
    }
    prompt = stub.requests[0]["messages"][0]["content"]
    assert "[1] (curie) Marie Curie was born in Warsaw." in prompt and "Where was Marie Curie born?" in prompt


def test_stream_relays_llm_tokens_then_writes_the_trace(rag: DocumentRag) -> None:
    async def collect() -> list[tuple[str, dict]]:
        return [event async for event in rag.stream(DEFAULT, "Where was Marie Curie born?", Options(k=2))]

    with stubbed_llm(rag, Reply("Marie Curie was born in Warsaw [1].")) as stub:
        events = asyncio.run(collect())
    names = [name for name, _ in events]
    assert names[0] == "sources" and names[-1] == "done" and names.count("token") > 2
    assert "".join(data["text"] for name, data in events if name == "token") == "Marie Curie was born in Warsaw [1]."
    done = events[-1][1]
    assert done["model"] == "anthropic:claude-test" and stub.requests[0]["stream"] is True
    rows = select(
        rag.store, SPARQL_PREFIXES + f"SELECT ?answer WHERE {{ GRAPH ?g {{ <{done['trace']}> sr:answer ?answer }} }}"
    )
    assert rows == [{"answer": "Marie Curie was born in Warsaw [1]."}]


def test_hybrid_weights_choose_between_the_rankings(rag: DocumentRag) -> None:
    question = "Which river flows through the capital?"
    only = {
        mode: [p.chunk for p in asyncio.run(rag.retrieve(DEFAULT, question, Options(mode=mode, k=3)))]
        for mode in ("vector", "keyword")
    }
    assert only["vector"] != only["keyword"]  # the question is chosen so that the two disagree
    for weights, mode in (((1.0, 0.0), "vector"), ((0.0, 1.0), "keyword")):
        fused = [
            p.chunk
            for p in asyncio.run(rag.retrieve(DEFAULT, question, Options(mode="hybrid", k=3, weights=list(weights))))
        ]
        assert fused[: len(only[mode])] == only[mode]
