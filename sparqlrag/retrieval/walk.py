"""One Graph RAG question as the stages pass it on: the question in hand (Walk), the edges it
walks (Edge) and what the reifiers say of them (EdgeSources), what the walk found (Retrieval)
and the answer it gives (GraphAnswer). Each is a value; the stages are in graph_rag.py."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from pyoxigraph import Triple

from sparqlrag.retrieval.document_rag import Passage
from sparqlrag.retrieval.options import GRAPH_MODES, GraphMode, GraphRagOptions
from sparqlrag.retrieval.pagerank import FactSeed, Ranking
from sparqlrag.retrieval.question import check_question
from sparqlrag.retrieval.scope import GraphScope
from sparqlrag.retrieval.trace import FollowUp, Trace, TracedEdge, TracedPageRankSeed, TracedSeed, TracedSource
from sparqlrag.retrieval.views import EdgeView, GraphRagAnswer, PageRankSeedView, SeedView, SourceView
from sparqlrag.store import vocab
from sparqlrag.store.select import Term, lexical

TRACED_MODES: dict[str, str] = {
    "evidence": "graph-rag/evidence",
    "pagerank": "graph-rag/pagerank",
    "graph": "graph-rag",
    "hybrid": "hybrid",
}


@dataclass(frozen=True)
class Edge:
    fact: Triple
    labels: tuple[str, str, str]
    score: float = 0.0  # what ranks the edge: relevance and the weight of the path to it
    relevance: float = 0.0  # its text against the best-matching concept
    concept: str = ""
    hop: int = 0
    statement: str | None = None
    sentence: str | None = None
    chunks: tuple[str, ...] = ()
    reasoning: str | None = None
    via: Edge | None = None  # the kept edge that led the walk to this edge's anchor (None at hop 1)
    anchor: str = ""  # the frontier node the edge was fetched from
    vector: np.ndarray | None = field(default=None, repr=False, compare=False)  # the fact's, from the fact index

    @property
    def text(self) -> str:
        return " ".join(self.labels)

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
            self.chunks,
        )


@dataclass(frozen=True)
class EdgeSources:
    """What the store says of a fact the walk scored: its reifier, its evidence sentence, and
    the chunks it was extracted from."""

    statement: str
    sentence: str | None
    chunks: tuple[str, ...]


def edge_sources(rows: list[dict[str, Term]], facts: set[Triple]) -> dict[Triple, EdgeSources]:
    """What the rows of store/fact_sources.py say of each of `facts`, rows in the store's
    order: the last reifier, the first evidence sentence, every chunk once."""
    found: dict[Triple, EdgeSources] = {}
    for row in rows:
        fact = Triple(row["s"], row["p"], row["o"])  # type: ignore[arg-type]
        if fact not in facts:
            continue
        before = found.get(fact)
        chunk, chunks = lexical(row["chunk"]), before.chunks if before is not None else ()
        sentence = lexical(row["sentence"]) if "sentence" in row else None
        found[fact] = EdgeSources(
            lexical(row["st"]),
            (before.sentence if before is not None else None) or sentence,
            chunks if chunk in chunks else (*chunks, chunk),
        )
    return found


def evidenced(
    kept: list[Edge], scored: list[Edge], sources: dict[Triple, EdgeSources], reasoning: dict[int, str | None]
) -> tuple[list[Edge], list[Edge]]:
    """The kept and the scored edges with their sources (given to one edge per fact: the kept
    one, else the scored one) and the kept edges with their `reasoning` (by place, from 0);
    each path behind them leads through the edges so made."""
    chosen = {e.fact: e for e in scored} | {e.fact: e for e in kept}
    sourced = {id(e): sources[fact] for fact, e in chosen.items() if fact in sources}
    reasoned = {id(kept[place]): said for place, said in reasoning.items()}
    made: dict[int, Edge] = {}

    def made_of(edge: Edge) -> Edge:
        if id(edge) not in made:
            via = made_of(edge.via) if edge.via is not None else None
            changes: dict[str, object] = {"via": via} if via is not edge.via else {}
            if (found := sourced.get(id(edge))) is not None:
                changes |= {"statement": found.statement, "sentence": found.sentence, "chunks": found.chunks}
            if id(edge) in reasoned:
                changes["reasoning"] = reasoned[id(edge)]
            made[id(edge)] = replace(edge, **changes) if changes else edge  # type: ignore[arg-type]
        return made[id(edge)]

    return [made_of(e) for e in kept], [made_of(e) for e in scored]


def path_vector(edge: Edge, vector: np.ndarray | None) -> np.ndarray:
    """The edge's fact's `vector` plus the leading fact's (not unit length): what the facts scorer judges."""
    assert vector is not None, "the facts scorer gives every edge its fact's vector"
    lead = edge.leading
    return vector + lead.vector if lead is not None and lead.vector is not None else vector


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


@dataclass(frozen=True)
class Walk:
    """One question in hand: its trace (which records each stage as it runs), options, mode and
    the scope every stage keeps within (None: the whole collection)."""

    trace: Trace
    options: GraphRagOptions
    mode: GraphMode
    scope: GraphScope | None = None

    @classmethod
    def start(
        cls,
        question: str,
        mode: GraphMode,
        options: GraphRagOptions | None,
        scope: GraphScope | None = None,
        follow_up: FollowUp | None = None,
    ) -> Walk:
        """A walk for a checked question (ValueError says what is wrong with it, or the mode)."""
        if mode not in GRAPH_MODES:
            raise ValueError(f"mode must be one of {', '.join(GRAPH_MODES)}, not {mode!r}")
        within = None if scope is None else scope.scope
        traced = Trace(check_question(question), TRACED_MODES[mode], scope=within, follow_up=follow_up)
        return cls(traced, options or GraphRagOptions(), mode, scope)

    @property
    def chunks(self) -> frozenset[str] | None:
        """The chunks the scope allows; None: any."""
        return None if self.scope is None else self.scope.chunks


@dataclass(frozen=True)
class Retrieval:
    """What the walk found for one question, every stage but synthesis: what the answer is made from."""

    trace: Trace
    concepts: list[str]
    grounding: Grounding
    explored: int
    edges: list[Edge]  # the kept edges, best first
    passages: list[Passage]
    ranking: Ranking | None = None  # pagerank mode, and evidence's bridges: what PageRank made of the seeds

    @property
    def seeds(self) -> list[TracedSeed]:
        return self.grounding.seeds


def traced_sources(
    passages: list[Passage], ranking: Ranking | None, carried_statements: dict[str, tuple[str, ...]]
) -> list[TracedSource]:
    """The passages as the trace keeps them, in order: what each supports, carried and bridges."""
    carriers = ranking.carriers if ranking else {}
    return [
        TracedSource(
            p.chunk,
            rank,
            p.score,
            p.supports,
            carriers.get(p.chunk, ()),
            carried_statements.get(p.chunk, ()),
            p.bridge,
        )
        for rank, p in enumerate(passages, start=1)
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
