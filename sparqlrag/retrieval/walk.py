"""One Graph RAG question's state as the stages build it (Walk), the edges it walks (Edge),
and the answer it gives (GraphAnswer). The stages are in graph_rag.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pyoxigraph import Triple

from sparqlrag.retrieval.document_rag import Passage
from sparqlrag.retrieval.options import GRAPH_MODES, GraphMode, GraphRagOptions
from sparqlrag.retrieval.pagerank import FactSeed, Ranking
from sparqlrag.retrieval.question import check_question
from sparqlrag.retrieval.trace import Trace, TracedEdge, TracedPageRankSeed, TracedSeed, TracedSource
from sparqlrag.retrieval.views import EdgeView, GraphRagAnswer, PageRankSeedView, SeedView, SourceView
from sparqlrag.store import vocab

TRACED_MODES: dict[str, str] = {
    "evidence": "graph-rag/evidence",
    "pagerank": "graph-rag/pagerank",
    "graph": "graph-rag",
    "hybrid": "hybrid",
}


@dataclass
class Edge:
    fact: Triple
    labels: tuple[str, str, str]
    score: float = 0.0  # what ranks the edge: relevance and the weight of the path to it
    relevance: float = 0.0  # its text against the best-matching concept
    concept: str = ""
    hop: int = 0
    statement: str | None = None
    sentence: str | None = None
    chunks: list[str] = field(default_factory=list)
    reasoning: str | None = None
    via: Edge | None = None  # the kept edge that led the walk to this edge's anchor (None at hop 1)
    anchor: str = ""  # the frontier node the edge was fetched from
    vector: np.ndarray | None = field(default=None, repr=False, compare=False)  # the fact's, from the fact index

    @property
    def text(self) -> str:
        return " ".join(self.labels)

    @property
    def path_vector(self) -> np.ndarray:
        """Its fact's vector plus the leading fact's (not unit length): what the facts scorer judges."""
        assert self.vector is not None, "the facts scorer sets every edge's vector first"
        lead = self.leading
        return self.vector + lead.vector if lead is not None and lead.vector is not None else self.vector

    @property
    def leading(self) -> Edge | None:
        """The fact this edge continues, when it says how: a co-occurrence is no relation, so an
        edge reached through one is judged on its own."""
        return self.via if self.via is not None and self.via.fact.predicate != vocab.SR_COOCCURS else None

    @property
    def path_text(self) -> str:
        """The fact that led here, then this one: what the text scorer judges, so that a second
        hop is scored as the path it completes."""
        return f"{self.leading.text}. {self.text}" if self.leading else self.text

    @property
    def sentence_text(self) -> str:
        """The fact as a sentence: its evidence sentence, a definition as written, or its labels."""
        if self.sentence:
            return self.sentence
        if self.fact.predicate == vocab.SKOS_DEFINITION:
            return self.labels[2]
        text = self.text
        return text if text.endswith((".", "!", "?")) else text + "."

    def view(self) -> EdgeView:
        return EdgeView.traced(self.traced())

    def traced(self) -> TracedEdge:
        """The edge as the trace keeps it, and as both the answer and the trace show it."""
        return TracedEdge(
            self.fact,
            self.statement,
            self.score,
            self.hop,
            self.concept,
            self.reasoning,
            self.via.fact if self.via else None,
            self.labels,
            self.via.labels if self.via else None,
            self.relevance,
            self.sentence,
            tuple(self.chunks),
        )


def fact_texts(edges: list[Edge]) -> dict[Triple, str]:
    """Each fact's text, for the edges and every edge of the paths behind them: what names a
    bridge's path, which may pass through an edge no longer kept (a co-occurrence given way)."""
    said: dict[Triple, str] = {}
    for edge in edges:
        step: Edge | None = edge
        while step is not None and step.fact not in said:
            said[step.fact] = step.text
            step = step.via
    return said


@dataclass(frozen=True)
class GraphAnswer:
    question: str
    answer: str
    concepts: list[str]
    seeds: list[TracedSeed]
    explored: int
    edges: list[Edge]
    passages: list[Passage]
    trace: str
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    pagerank_seeds: list[TracedPageRankSeed] = field(default_factory=list)  # pagerank mode
    sources: list[TracedSource] = field(default_factory=list)  # the passages as traced, in order

    def view(self) -> GraphRagAnswer:
        """The answer, its seeds, edges and sources as its trace shows them (views.py)."""
        return GraphRagAnswer(
            question=self.question,
            answer=self.answer,
            trace=self.trace,
            model=self.model,
            usage=self.usage,
            concepts=self.concepts,
            seeds=[SeedView.traced(s) for s in self.seeds],
            explored_edges=self.explored,
            edges=[e.view() for e in self.edges],
            pagerank_seeds=[PageRankSeedView.traced(s) for s in self.pagerank_seeds],
            sources=self.source_views(),
        )

    def source_views(self) -> list[SourceView]:
        """The passages as the trace shows them: rank, score, what each supports or bridges."""
        texts = fact_texts(self.edges)
        return [SourceView.traced(s, p, texts) for s, p in zip(self.sources, self.passages, strict=True)]


@dataclass(frozen=True)
class Grounding:
    """What grounding found, for the hops and the passages: the seeds, the concepts' vectors,
    the question and its clauses (what a longer path is scored against) with their vectors, and
    the question's nearest facts (fact index)."""

    seeds: list[TracedSeed]
    concept_vectors: np.ndarray
    path_targets: list[str]
    path_vectors: np.ndarray
    near_facts: list[FactSeed]
    linked: frozenset[str]  # the entities the names in the question link to

    @property
    def question_vector(self) -> np.ndarray:
        return self.path_vectors[0]


@dataclass
class Walk:
    """What the stages build up for one question."""

    trace: Trace
    options: GraphRagOptions
    mode: GraphMode
    concepts: list[str] = field(default_factory=list)
    grounding: Grounding | None = None
    seeds: list[TracedSeed] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    ranking: Ranking | None = None  # pagerank mode, and evidence's bridges: what PageRank made of the seeds
    explored: int = 0

    @classmethod
    def start(cls, question: str, mode: GraphMode, options: GraphRagOptions | None) -> Walk:
        """A walk for a checked question (ValueError says what is wrong with it, or the mode)."""
        if mode not in GRAPH_MODES:
            raise ValueError(f"mode must be one of {', '.join(GRAPH_MODES)}, not {mode!r}")
        return cls(
            Trace(check_question(question), TRACED_MODES[mode]),
            options or GraphRagOptions(),
            mode,
        )

    def trace_sources(self, carried_statements: dict[str, tuple[str, ...]] | None = None) -> None:
        carriers = self.ranking.carriers if self.ranking else {}
        self.trace.sources = [
            TracedSource(
                p.chunk,
                rank,
                p.score,
                p.supports,
                carriers.get(p.chunk, ()),
                (carried_statements or {}).get(p.chunk, ()),
                p.bridge,
            )
            for rank, p in enumerate(self.passages, start=1)
        ]


def stated_over_cooccurring(edges: list[Edge]) -> list[Edge]:
    """The edges less each co-occurrence between two entities that a kept relation also joins:
    appearing together says less than the relation that says how, so it never outranks it."""
    stated = {frozenset((e.fact.subject, e.fact.object)) for e in edges if e.fact.predicate != vocab.SR_COOCCURS}
    return [
        e
        for e in edges
        if e.fact.predicate != vocab.SR_COOCCURS or frozenset((e.fact.subject, e.fact.object)) not in stated
    ]


def path_to(edge: Edge) -> tuple[Triple, ...]:
    """The facts of the walk's path to `edge`, first to last."""
    path = [edge.fact]
    while edge.via is not None:
        edge = edge.via
        path.insert(0, edge.fact)
    return tuple(path)


def best_by_chunk(scored: list[Edge]) -> dict[str, Edge]:
    """Each chunk's best-scored edge among those it is evidence for."""
    best: dict[str, Edge] = {}
    for edge in scored:
        for chunk in edge.chunks:
            if chunk not in best or best[chunk].score < edge.score:
                best[chunk] = edge
    return best
