"""Document RAG: passages by vector, keyword (BM25) or hybrid search, then an answer.

hybrid = weighted reciprocal rank fusion (k=60) of the vector and keyword rankings (weights:
the setting `hybrid_weights`, 0.7 / 0.3 by default, Weaviate's default hybrid alpha; see
bench/RESULTS.md for a sweep). An
optional reranker rescores the fused candidates, and MMR trades relevance for variety.
Passages come only from chunks whose document is `ready` in the store. Without an LLM the
answer is extractive: the passages' sentences that best answer the question, cited
(retrieval/extractive.py).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any, Unpack

import numpy as np
from pyoxigraph import NamedNode, Triple

from sparqlrag.models.embedder import Embedder
from sparqlrag.models.llm import ChatModel
from sparqlrag.models.prompts import render
from sparqlrag.models.reranker import Reranker
from sparqlrag.retrieval.extractive import AnswerSentences
from sparqlrag.retrieval.options import DocumentRagOptions
from sparqlrag.retrieval.question import check_question
from sparqlrag.retrieval.scope import Scope
from sparqlrag.retrieval.synthesis import synthesise
from sparqlrag.retrieval.trace import Framing, Stage, Trace, TracedSource, TraceLog
from sparqlrag.retrieval.views import DocumentRagAnswer, PassageView
from sparqlrag.store import vocab
from sparqlrag.store.base import QuadStore
from sparqlrag.store.keyword_index import KeywordIndex
from sparqlrag.store.select import count, select
from sparqlrag.store.sparql_text import sparql_term, values
from sparqlrag.store.vector_index import VectorIndex
from sparqlrag.store.vocab import READY, Iris
from sparqlrag.threads import off_loop

RRF_K = 60
NEAR_DUPLICATE = 0.9
WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Passage:
    chunk: str
    document: str
    title: str
    text: str
    score: float
    supports: Triple | None = None  # Graph RAG: the best fact the chunk is evidence for
    pages: tuple[int, int] | None = None  # the chunk's first and last page, for a paged document
    headings: str | None = None  # its heading path (sr:headingPath)
    copies: tuple[tuple[str, str], ...] = ()  # (document, title) of each other document with the same text
    bridge: tuple[Triple, ...] = ()  # Graph RAG's bridge passage: the walk's path of facts that brought it

    @property
    def citation(self) -> str:
        """How an answer cites it: "Annual report 2024, p. 3" (pp. 3-4 across pages), or its title."""
        if self.pages is None:
            return self.title
        first, last = self.pages
        return f"{self.title}, p. {first}" if first == last else f"{self.title}, pp. {first}-{last}"


@dataclass
class Answer:
    question: str
    answer: str
    passages: list[Passage]
    trace: str
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)

    def view(self) -> DocumentRagAnswer:
        return DocumentRagAnswer(
            question=self.question,
            answer=self.answer,
            trace=self.trace,
            model=self.model,
            usage=self.usage,
            sources=[PassageView.of(p) for p in self.passages],
        )


def passages_of(store: QuadStore, iris: Iris, chunks: list[str], scores: dict[str, float]) -> list[Passage]:
    """Chunk text and document for the ranked chunk IRIs, in their order, keeping only chunks of
    ready documents (one query)."""
    if not chunks:
        return []
    rows = select(
        store,
        vocab.SPARQL_PREFIXES
        + f"""
        SELECT ?chunk ?text ?doc ?title ?first ?last ?headings WHERE {{ {values("chunk", map(NamedNode, chunks))}
          GRAPH {sparql_term(iris.source_graph)} {{
            ?chunk sr:text ?text ; prov:wasDerivedFrom ?doc . ?doc sr:status "{READY}" ; dcterms:title ?title
            OPTIONAL {{ ?chunk bibo:pageStart ?first ; bibo:pageEnd ?last }}
            OPTIONAL {{ ?chunk sr:headingPath ?headings }} }} }}""",
    )
    found = {row["chunk"]: row for row in rows}
    return [_passage(found[iri], scores.get(iri, 0.0)) for iri in chunks if iri in found]


def _passage(row: dict[str, str], score: float) -> Passage:
    first, last = count(row.get("first")), count(row.get("last"))  # (clients may write these: never raise)
    pages = (first, last) if first is not None and last is not None else None
    return Passage(row["chunk"], row["doc"], row["title"], row["text"], score, None, pages, row.get("headings"))


def distinct(passages: list[Passage], k: int) -> list[Passage]:
    """The first k passages whose texts differ, each naming the documents whose copies of it it
    stands for (a report ingested as PDF and as HTML is one source): two texts are copies when
    their word 3-shingles overlap by NEAR_DUPLICATE (Broder's resemblance) or more."""
    kept: list[tuple[Passage, set[tuple[str, ...]]]] = []
    for passage in passages:
        if len(kept) == k:
            break
        shingles = _shingles(passage.text)
        for index, (other, theirs) in enumerate(kept):
            if _resemblance(shingles, theirs) >= NEAR_DUPLICATE:
                if passage.document != other.document:
                    kept[index] = (replace(other, copies=(*other.copies, (passage.document, passage.title))), theirs)
                break
        else:
            kept.append((passage, shingles))
    return [passage for passage, _ in kept]


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = WORD.findall(text.casefold())
    return {tuple(words[i : i + 3]) for i in range(max(1, len(words) - 2))}


def _resemblance(one: set[tuple[str, ...]], other: set[tuple[str, ...]]) -> float:
    return len(one & other) / len(one | other) if one or other else 1.0


def rrf(rankings: list[list[str]], weights: list[float], k: int = RRF_K) -> list[tuple[str, float]]:
    """Weighted reciprocal rank fusion: each list adds weight / (k + rank) to its items."""
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])


def mmr(relevance: np.ndarray, vectors: np.ndarray, k: int, lam: float) -> list[int]:
    """Maximal marginal relevance: indexes of k items, each chosen for relevance minus redundancy."""
    if len(relevance) == 0:
        return []
    spread = float(relevance.max() - relevance.min()) or 1.0
    relevance = (relevance - relevance.min()) / spread
    chosen: list[int] = []
    remaining = list(range(len(relevance)))
    while remaining and len(chosen) < k:

        def gain(i: int) -> float:
            redundancy = max((float(vectors[i] @ vectors[j]) for j in chosen), default=0.0)
            return lam * relevance[i] - (1 - lam) * redundancy

        best = max(remaining, key=gain)
        chosen.append(best)
        remaining.remove(best)
    return chosen


class DocumentRag:
    def __init__(
        self,
        *,
        store: QuadStore,
        vectors: VectorIndex,
        keywords: KeywordIndex,
        embedder: Embedder,
        weights: tuple[float, float],
        traces: TraceLog,
        reranker: Reranker | None = None,
        llm: ChatModel | None = None,
        prompts_dir: Any = None,
    ) -> None:
        self.store, self.vectors, self.keywords, self.embedder, self.traces = store, vectors, keywords, embedder, traces
        self.reranker, self.llm, self.prompts_dir = reranker, llm, prompts_dir
        self.weights = weights
        self.sentences = AnswerSentences(embedder)

    async def retrieve(
        self,
        iris: Iris,
        question: str,
        options: DocumentRagOptions | None = None,
        *,
        candidates: int = 50,
        scope: Scope | None = None,
    ) -> list[Passage]:
        """The options' k best passages of the collection (of the scope, when one is given) for
        the question; the hybrid fusion's weights default to the instance's."""
        options = options or DocumentRagOptions()
        mode, k = options.mode, options.k
        within = None if scope is None else scope.chunks
        if mode == "hybrid":
            ranked = await self.hybrid_ranking(
                iris, question, candidates=candidates, weights=options.fusion, within=within
            )
        elif mode == "vector":
            ranked = await self._dense(iris, question, candidates, within)
        else:
            ranked = await self._keyword(iris, question, candidates, within)
        order, scores = [iri for iri, _ in ranked], dict(ranked)
        passages = await off_loop(passages_of, self.store, iris, order[:candidates], scores)
        if options.rerank and self.reranker is not None and passages:
            rescored = await off_loop(self.reranker.score, question, [p.text for p in passages])
            passages = [replace(p, score=float(s)) for p, s in zip(passages, rescored)]
            passages.sort(key=lambda p: -p.score)
        if options.mmr is not None and len(passages) > k:
            vectors = await off_loop(self.embedder.embed, [p.text for p in passages])
            picked = mmr(np.array([p.score for p in passages]), vectors, k, options.mmr)
            passages = [passages[i] for i in picked]
        return distinct(passages, k)

    async def hybrid_ranking(
        self,
        iris: Iris,
        question: str,
        *,
        candidates: int = 50,
        weights: tuple[float, float] | None = None,
        within: frozenset[str] | None = None,
    ) -> list[tuple[str, float]]:
        """The dense and keyword rankings fused (chunk, score), best first: the passages the
        "hybrid" mode answers from, and Graph RAG's PageRank seeds its passages with."""
        dense, keyword = await asyncio.gather(
            self._dense(iris, question, candidates, within), self._keyword(iris, question, candidates, within)
        )
        return rrf([[iri for iri, _ in dense], [iri for iri, _ in keyword]], list(weights or self.weights))

    async def fused_with_keywords(
        self,
        iris: Iris,
        question: str,
        ranking: list[str],
        *,
        candidates: int = 50,
        within: frozenset[str] | None = None,
    ) -> list[tuple[str, float]]:
        """`ranking` (chunk IRIs, best first) fused with the keyword ranking at the instance's
        weights, as "hybrid" fuses the dense one: Graph RAG's hybrid mode fuses its own."""
        keyword = await self._keyword(iris, question, candidates, within)
        return rrf([ranking, [iri for iri, _ in keyword]], list(self.weights))

    async def similarities(self, iris: Iris, question: str, chunks: list[str]) -> dict[str, float]:
        """Cosine similarity of the question's embedding and each chunk's stored one (chunks with
        no vector left out): a figure whose meaning does not depend on the ranking that found the
        chunk, unlike a fusion score."""
        query = await off_loop(self.embedder.embed_one, question)
        stored = await off_loop(self.vectors.vectors_of, iris.collection, "chunks", chunks)
        norm = float(np.linalg.norm(query)) or 1.0
        return {
            iri: float(query @ vector) / (norm * (float(np.linalg.norm(vector)) or 1.0))
            for iri, vector in stored.items()
        }

    async def _dense(
        self, iris: Iris, question: str, candidates: int, within: frozenset[str] | None = None
    ) -> list[tuple[str, float]]:
        query = await off_loop(self.embedder.embed_one, question)
        return await off_loop(self.vectors.ranking, iris.collection, "chunks", query, candidates, within)

    async def _keyword(
        self, iris: Iris, question: str, candidates: int, within: frozenset[str] | None = None
    ) -> list[tuple[str, float]]:
        matches = await off_loop(self.keywords.search, iris.collection, question, candidates, within)
        return [(h.iri, h.score) for h in matches]

    async def answer(
        self, iris: Iris, question: str, options: DocumentRagOptions | None = None, **framing: Unpack[Framing]
    ) -> Answer:
        """What `stream` yields, collected: the LLM answers in one (cached) call."""
        trace, passages = await self._retrieve_traced(iris, question, options or DocumentRagOptions(), framing)
        done: dict[str, Any] = {}
        async for event, data in self._events(iris, trace, passages, live=False):
            done = data if event == "done" else done
        return Answer(trace.question, trace.answer, passages, done["trace"], trace.model, trace.usage)

    async def stream(
        self, iris: Iris, question: str, options: DocumentRagOptions | None = None, **framing: Unpack[Framing]
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """(event, data) pairs: "sources" first, then "token" pieces of the answer, then "done"
        with the whole answer and the trace IRI (written before "done" is sent)."""
        trace, passages = await self._retrieve_traced(iris, question, options or DocumentRagOptions(), framing)
        async for event in self._events(iris, trace, passages, live=True):
            yield event

    async def _events(
        self, iris: Iris, trace: Trace, passages: list[Passage], *, live: bool
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Sources, the answer (streamed from the LLM when `live`; extractive without an LLM or
        passages), and the trace written."""
        yield "sources", {"sources": [PassageView.of(p).as_json() for p in passages]}
        with Stage(trace, "synthesis"):
            if self.llm is not None and passages:
                async for piece in synthesise(self.llm, self._prompt(trace.question, passages), trace, live=live):
                    yield "token", {"text": piece}
            else:
                trace.answer = await off_loop(self.extractive_answer, trace.question, passages)
                yield "token", {"text": trace.answer}
        iri = await self.traces.write(iris, trace)
        yield "done", {"answer": trace.answer, "trace": iri, "model": trace.model}

    async def _retrieve_traced(
        self, iris: Iris, question: str, options: DocumentRagOptions, framing: Framing
    ) -> tuple[Trace, list[Passage]]:
        mode, scorer, scope = f"document-rag/{options.mode}", self.scorer(options), framing.get("scope")
        trace = Trace(check_question(question), mode, scorer=scorer, scope=scope, follow_up=framing.get("follow_up"))
        with Stage(trace, "retrieval"):
            passages = await self.retrieve(iris, trace.question, options, scope=scope)
        trace.sources = [TracedSource(p.chunk, rank, p.score) for rank, p in enumerate(passages, start=1)]
        return trace, passages

    def scorer(self, options: DocumentRagOptions) -> str:
        """What ranks the passages: the reranker when asked for, else cosine, BM25, or their fusion."""
        if options.rerank and self.reranker is not None:
            return self.reranker.name
        cosine = f"cosine:{self.embedder.model_name}"
        return {"vector": cosine, "keyword": "bm25", "hybrid": f"rrf({cosine}, bm25)"}[options.mode]

    def _prompt(self, question: str, passages: list[Passage]) -> str:
        knowledge = "\n\n".join(f"[{i}] ({p.citation}) {p.text}" for i, p in enumerate(passages, start=1))
        return render("synthesis", self.prompts_dir, question=question, knowledge=knowledge)

    def extractive_answer(self, question: str, passages: list[Passage]) -> str:
        """The passages' sentences that best answer the question, cited (retrieval/extractive.py)."""
        return self.sentences.answer(question, self.sentences.of_passages([p.text for p in passages]))
