"""One Graph RAG question's state as the stages build it (Walk), the edges it walks (Edge),
the options that bound it, and the answer it gives (GraphAnswer). The stages are in graph_rag.py."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal

import numpy as np
from pyoxigraph import Triple

from sparqlrag.retrieval.document_rag import Passage, passage_json
from sparqlrag.retrieval.pagerank import FactSeed, Ranking
from sparqlrag.retrieval.question import check_question
from sparqlrag.retrieval.trace import Trace, TracedPageRankSeed, TracedSeed, TracedSource, fact_json
from sparqlrag.store import vocab

# How the passages are ranked. "pagerank" (the default): personalized PageRank over the graph
# index, seeded by the question's nearest facts and the hybrid ranking (retrieval/pagerank.py).
# "graph": the walk's own ranking, dense retrieval lifted by the walk's facts; "hybrid": that
# ranking fused with the keyword ranking by reciprocal rank, as Document RAG's hybrid fuses the
# dense one. The walk chooses the facts the answer cites in every mode.
Mode = Literal["pagerank", "graph", "hybrid"]
MODES: tuple[Mode, ...] = ("pagerank", "graph", "hybrid")
TRACED_MODES: dict[str, str] = {"pagerank": "graph-rag/pagerank", "graph": "graph-rag", "hybrid": "hybrid"}


class EmptyGraph(LookupError):
    """The collection has no entities to ground a question on."""


@dataclass(frozen=True)
class GraphRagOptions:
    """The walk's limits; every one can be set per request."""

    entity_limit: int = 50  # seeds, shared among the concepts
    triple_limit: int = 30  # edges fetched per frontier entity and direction
    max_path_length: int = 2  # hops
    edge_limit: int = 25  # edges kept per hop
    max_reranker_input: int = 350  # candidate edges scored per hop
    fact_seeds: int = 5  # the question's nearest facts, whose ends seed the walk (HippoRAG 2 links 5)
    k: int = 5  # passages returned
    reasoning: bool = False  # ask the LLM why each kept edge matters
    scorer: str = (
        "facts"  # "facts": the fact index's vectors (a lookup); "text": each path's text, embedded or cross-encoded now
    )

    BOUNDS: ClassVar[dict[str, int]] = {
        "entity_limit": 500,
        "triple_limit": 1000,
        "max_path_length": 5,
        "edge_limit": 500,
        "max_reranker_input": 5000,
        "fact_seeds": 100,
        "k": 100,
    }
    AT_LEAST: ClassVar[dict[str, int]] = {"fact_seeds": 0}  # a bound below 1

    def __post_init__(self) -> None:
        if self.scorer not in ("facts", "text"):
            raise ValueError(f'scorer must be "facts" or "text", got {self.scorer!r}')
        if not isinstance(self.reasoning, bool):
            raise ValueError(f"reasoning must be true or false, got {self.reasoning!r}")
        for name, highest in self.BOUNDS.items():
            value, lowest = getattr(self, name), self.AT_LEAST.get(name, 1)
            if not isinstance(value, int) or isinstance(value, bool) or not lowest <= value <= highest:
                raise ValueError(f"{name} must be an integer from {lowest} to {highest}, got {value!r}")

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


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

    def json(self) -> dict[str, Any]:
        via = fact_json(self.via.fact) | {"text": self.via.text} if self.via else None
        return {
            **fact_json(self.fact),
            "labels": list(self.labels),
            "text": self.text,
            "score": self.score,
            "relevance": self.relevance,
            "concept": self.concept,
            "hop": self.hop,
            "via": via,
            "statement": self.statement,
            "sentence": self.sentence,
            "chunks": self.chunks,
            "reasoning": self.reasoning,
        }


@dataclass
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

    def json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "trace": self.trace,
            "model": self.model,
            "usage": self.usage,
            "concepts": self.concepts,
            "seeds": [seed_json(s) for s in self.seeds],
            "explored_edges": self.explored,
            "edges": [e.json() for e in self.edges],
            "pagerank_seeds": [
                {"entity": s.entity, "weight": s.weight, "facts": [fact_json(f) for f in s.facts]}
                for s in self.pagerank_seeds
            ],
            "sources": [passage_json(p) for p in self.passages],
        }


def seed_json(seed: TracedSeed) -> dict[str, Any]:
    return {
        "entity": seed.entity,
        "score": seed.score,
        "concept": seed.concept,
        "alias": seed.alias,
        "fact": fact_json(seed.fact) if seed.fact else None,
    }


@dataclass
class Walk:
    """What the stages build up for one question."""

    trace: Trace
    options: GraphRagOptions
    mode: Mode = "graph"
    concepts: list[str] = field(default_factory=list)
    concept_vectors: np.ndarray | None = None
    question_vector: np.ndarray | None = None
    path_targets: list[str] = field(default_factory=list)  # what a path is scored against: the question and its clauses
    path_vectors: np.ndarray | None = None
    seeds: list[TracedSeed] = field(default_factory=list)
    near_facts: list[FactSeed] = field(default_factory=list)  # the question's nearest facts (fact index)
    linked: set[str] = field(default_factory=set)  # the entities the names in the question link to
    edges: list[Edge] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    ranking: Ranking | None = None  # pagerank mode: what PageRank made of the seeds
    explored: int = 0
    answer: GraphAnswer | None = None  # set once synthesis is done and the trace written

    @classmethod
    def start(cls, question: str, mode: Mode, options: GraphRagOptions | None) -> Walk:
        """A walk for a checked question (ValueError says what is wrong with it, or the mode)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
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
            )
            for rank, p in enumerate(self.passages, start=1)
        ]
