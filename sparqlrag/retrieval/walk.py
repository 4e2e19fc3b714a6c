"""One Graph RAG question's state as the stages build it (Walk), the edges it walks (Edge),
and the answer it gives (GraphAnswer). The stages are in graph_rag.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pyoxigraph import Triple

from sparqlrag.retrieval.document_rag import Passage, passage_json
from sparqlrag.retrieval.options import GRAPH_MODES, GraphMode, GraphRagOptions
from sparqlrag.retrieval.pagerank import FactSeed, Ranking
from sparqlrag.retrieval.question import check_question
from sparqlrag.retrieval.trace import Trace, TracedPageRankSeed, TracedSeed, TracedSource, fact_json
from sparqlrag.store import vocab

TRACED_MODES: dict[str, str] = {"pagerank": "graph-rag/pagerank", "graph": "graph-rag", "hybrid": "hybrid"}


class EmptyGraph(LookupError):
    """The collection has no entities to ground a question on."""


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
    mode: GraphMode = "graph"
    concepts: list[str] = field(default_factory=list)
    grounding: Grounding | None = None
    seeds: list[TracedSeed] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    ranking: Ranking | None = None  # pagerank mode: what PageRank made of the seeds
    explored: int = 0
    answer: GraphAnswer | None = None  # set once synthesis is done and the trace written

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
            )
            for rank, p in enumerate(self.passages, start=1)
        ]
