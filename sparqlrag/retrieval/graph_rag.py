"""Graph RAG: answer by walking the knowledge graph from the entities a question names.

The stages (DESIGN.md, "Retrieval"; TrustGraph's algorithm and defaults):
concepts (LLM, or the question and the names in it) -> one embedding batch -> grounding in
the entity index -> hops: the frontier's edges as subject and object, schema predicates
dropped, labels resolved in one query, edges scored against the concepts (a longer path, the
fact that led there then this one, against the question), the best kept and their far ends
the next frontier -> sources through the reifiers (optionally beside an LLM's reasoning about
the edges) -> synthesis (LLM, or extractive from facts and their sentences). Chunks rank by
the best scored edge they support and their similarity to the question, so Graph RAG also
returns passages. Every stage is timed and written to the collection's trace graph.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

import numpy as np
from pyoxigraph import Literal, NamedNode, Triple

from sparqlrag.models.embedder import Embedder
from sparqlrag.models.llm import ChatModel, Completion
from sparqlrag.models.prompts import json_items, parse_concepts, render
from sparqlrag.models.reranker import Reranker
from sparqlrag.retrieval.document_rag import Passage, passage_json, passages_of, rrf
from sparqlrag.retrieval.question import check_question
from sparqlrag.retrieval.trace import Trace, TracedEdge, TracedSeed, TracedSource, TraceLog, fact_json
from sparqlrag.store import vocab as v
from sparqlrag.store.provenance import fact_sources
from sparqlrag.store.select import select, select_terms
from sparqlrag.store.sparql_text import sparql_term, values
from sparqlrag.store.vector_index import VectorIndex
from sparqlrag.store.vocab import Iris, local_name

# predicates that describe the schema or names, not the world: never walked
SCHEMA_NAMESPACES = (v.RDF, v.RDFS, v.OWL)
SKIPPED_PREDICATES = (v.SKOS_ALT_LABEL.value,)
# A node reached through an edge whose edges in one direction fill triple_limit (a year, a
# genre, a country) is a hub: what is fetched from it is an arbitrary sample, and a path through
# it says little about the question, so its weight is damped (MetaQA 2-hop answer recall,
# questions 0-40, path scoring on: 80.3 undamped, 84.6 at 0.8, 86.4 at 0.6, 86.0 at 0.3).
HUB_DAMPING = 0.6


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
    k: int = 5  # passages returned
    reasoning: bool = False  # ask the LLM why each kept edge matters
    scorer: str = "text"  # "text": the edge's text, embedded or cross-encoded; "labels": its terms' label vectors (fast)

    BOUNDS: ClassVar[dict[str, int]] = {"entity_limit": 500, "triple_limit": 1000, "max_path_length": 5, "edge_limit": 500,
              "max_reranker_input": 5000, "k": 100}  # fmt: skip

    def __post_init__(self) -> None:
        if self.scorer not in ("labels", "text"):
            raise ValueError(f'scorer must be "labels" or "text", got {self.scorer!r}')
        if not isinstance(self.reasoning, bool):
            raise ValueError(f"reasoning must be true or false, got {self.reasoning!r}")
        for name, highest in self.BOUNDS.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= highest:
                raise ValueError(f"{name} must be an integer from 1 to {highest}, got {value!r}")

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
    vector: np.ndarray | None = field(default=None, repr=False, compare=False)  # the labels scorer's

    @property
    def text(self) -> str:
        return " ".join(self.labels)

    @property
    def leading(self) -> Edge | None:
        """The fact this edge continues, when it says how: a co-occurrence is no relation, so an
        edge reached through one is judged on its own (2Wiki graph R@5 59.9 -> 60.9)."""
        return self.via if self.via is not None and self.via.fact.predicate != v.SR_COOCCURS else None

    @property
    def path_text(self) -> str:
        """The fact that led here, then this one: what the text scorer judges, so that a second
        hop is scored as the path it completes (MetaQA 2-hop answer recall, questions 0-40:
        71.6 -> 80.3)."""
        return f"{self.leading.text}. {self.text}" if self.leading else self.text

    @property
    def told(self) -> str:
        """The fact as a sentence: its evidence sentence, a definition as written, or its labels."""
        if self.sentence:
            return self.sentence
        if self.fact.predicate == v.SKOS_DEFINITION:
            return self.labels[2]
        text = self.text
        return text if text.endswith((".", "!", "?")) else text + "."

    def json(self) -> dict[str, Any]:
        via = fact_json(self.via.fact) | {"text": self.via.text} if self.via else None
        return {**fact_json(self.fact), "labels": list(self.labels), "text": self.text, "score": self.score,
                "relevance": self.relevance, "concept": self.concept, "hop": self.hop, "via": via,
                "statement": self.statement, "sentence": self.sentence, "chunks": self.chunks, "reasoning": self.reasoning}  # fmt: skip


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

    def json(self) -> dict[str, Any]:
        return {
            "question": self.question, "answer": self.answer, "trace": self.trace, "model": self.model, "usage": self.usage,
            "concepts": self.concepts, "seeds": [seed_json(s) for s in self.seeds], "explored_edges": self.explored,
            "edges": [e.json() for e in self.edges], "sources": [passage_json(p) for p in self.passages],
        }  # fmt: skip


def seed_json(seed: TracedSeed) -> dict[str, Any]:
    return {"entity": seed.entity, "score": seed.score, "concept": seed.concept}


@dataclass
class Walk:
    """What the stages build up for one question."""

    trace: Trace
    options: GraphRagOptions
    concepts: list[str] = field(default_factory=list)
    concept_vectors: np.ndarray | None = None
    question_vector: np.ndarray | None = None
    seeds: list[TracedSeed] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    explored: int = 0
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})

    @classmethod
    def start(cls, question: str, mode: str, options: GraphRagOptions | None) -> Walk:
        """A walk for a checked question (ValueError says what is wrong with it)."""
        return cls(Trace(check_question(question), mode), options or GraphRagOptions())

    def fuse(self, passages: list[Passage]) -> None:
        """Reciprocal rank fusion of the graph's passages with others (equal weights), k kept."""
        by_chunk = {p.chunk: p for p in passages} | {p.chunk: p for p in self.passages}
        fused = rrf([[p.chunk for p in self.passages], [p.chunk for p in passages]], [1.0, 1.0])[: self.options.k]
        self.passages = [replace(by_chunk[chunk], score=score) for chunk, score in fused]
        self.trace_sources()

    def trace_sources(self) -> None:
        self.trace.sources = [TracedSource(p.chunk, rank, p.score, p.supports) for rank, p in enumerate(self.passages, start=1)]

    def count(self, completion: Completion) -> None:
        self.usage["input_tokens"] += completion.input_tokens
        self.usage["output_tokens"] += completion.output_tokens


class _Stage:
    """Times a stage into the trace: `with _Stage(walk, "grounding"):`."""

    def __init__(self, walk: Walk, name: str) -> None:
        self.walk, self.name = walk, name

    def __enter__(self) -> None:
        self.started = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.walk.trace.steps[self.name] = 1000 * (time.perf_counter() - self.started)


class GraphRag:
    def __init__(
        self, *, store: Any, vectors: VectorIndex, embedder: Embedder, reranker: Reranker, base_iri: str, traces: TraceLog,
        llm: ChatModel | None = None, prompts_dir: Any = None, phrases: Callable[[str], list[str]] | None = None,
    ) -> None:  # fmt: skip
        self.store, self.vectors, self.embedder, self.reranker, self.traces = store, vectors, embedder, reranker, traces
        self.base_iri, self.llm, self.prompts_dir = base_iri, llm, prompts_dir
        self.phrases = phrases or (lambda question: [])

    # -- the public calls -----------------------------------------------------------------------

    async def retrieve(self, collection: str, question: str, options: GraphRagOptions | None = None) -> Walk:
        """Every stage but synthesis (no trace written): for passage-recall benchmarks."""
        walk = Walk.start(question, "graph-rag", options)
        async for _ in self._walk(Iris(self.base_iri, collection), walk):
            pass
        return walk

    async def answer(
        self, collection: str, question: str, options: GraphRagOptions | None = None, *, also: list[Passage] | None = None
    ) -> GraphAnswer:  # fmt: skip
        """Walk, synthesise, write the trace. Raises EmptyGraph when nothing can be grounded.
        `also` (Document RAG's passages) is fused with the graph's passages (RRF) before
        synthesis: the "hybrid" mode, which answers from the facts and both sets of passages."""
        iris = Iris(self.base_iri, collection)
        walk = Walk.start(question, "hybrid" if also is not None else "graph-rag", options)
        async for _ in self._walk(iris, walk):
            pass
        if also is not None:
            walk.fuse(also)
        with _Stage(walk, "synthesis"):
            if self.llm is not None:
                completion = await self.llm.complete(self._prompt(walk))
                walk.count(completion)
                walk.trace.answer, walk.trace.model = completion.text, completion.model
            else:
                walk.trace.answer = self.extractive_answer(walk)
        return await self._finish(iris, walk)

    async def stream(
        self, collection: str, question: str, options: GraphRagOptions | None = None, *, also: list[Passage] | None = None
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:  # fmt: skip
        """(event, data) pairs: the explanation as stages finish ("concepts", "seeds", "hop"...,
        "edges"), the answer as "token"s, then "sources", then "done" with the trace IRI.
        `also` as in `answer`."""
        iris = Iris(self.base_iri, collection)
        walk = Walk.start(question, "hybrid" if also is not None else "graph-rag", options)
        async for event in self._walk(iris, walk):
            yield event
        if also is not None:
            walk.fuse(also)
        with _Stage(walk, "synthesis"):
            if self.llm is not None:
                pieces = []
                async for piece in self.llm.stream(self._prompt(walk)):
                    pieces.append(piece)
                    yield "token", {"text": piece}
                walk.trace.answer, walk.trace.model = "".join(pieces), self.llm.name
            else:
                walk.trace.answer = self.extractive_answer(walk)
                yield "token", {"text": walk.trace.answer}
        answer = await self._finish(iris, walk)
        yield "sources", {"sources": [passage_json(p) for p in answer.passages]}
        yield "done", {"answer": answer.answer, "trace": answer.trace, "model": answer.model, "usage": answer.usage}

    async def _finish(self, iris: Iris, walk: Walk) -> GraphAnswer:
        trace = walk.trace
        trace.input_tokens, trace.output_tokens = walk.usage["input_tokens"], walk.usage["output_tokens"]
        iri = await self.traces.write(iris.collection, trace)
        return GraphAnswer(trace.question, trace.answer, walk.concepts, walk.seeds, walk.explored, walk.edges,
                           walk.passages, iri, trace.model, dict(walk.usage))  # fmt: skip

    # -- the walk -------------------------------------------------------------------------------

    async def _walk(self, iris: Iris, walk: Walk) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        with _Stage(walk, "concepts"):
            walk.concepts = walk.trace.concepts = await self._concepts(walk)
        yield "concepts", {"concepts": walk.concepts}
        with _Stage(walk, "grounding"):
            walk.seeds = walk.trace.seeds = await self._ground(iris, walk)
        if not walk.seeds:
            raise EmptyGraph(f"collection {iris.collection!r} has no entities to answer from: ingest documents first")
        yield "seeds", {"seeds": [seed_json(s) for s in walk.seeds]}
        # the frontier's nodes, each weighted by how it was reached: a seed by its grounding
        # score, a node further out by the score of the best kept edge that led to it. A node
        # (or edge) met again through a stronger path is walked (scored) again with that weight.
        frontier: dict[str, float] = {s.entity: s.score for s in walk.seeds}
        via: dict[str, Edge] = {}  # node -> the kept edge that gave it its weight
        visited: dict[str, float] = {}
        seen: dict[Triple, float] = {}
        kept_by_fact: dict[Triple, Edge] = {}
        scored_by_fact: dict[Triple, Edge] = {}  # every edge scored, kept or not: their chunks are the passages
        for hop in range(1, walk.options.max_path_length + 1):
            frontier = {node: weight for node, weight in frontier.items() if weight > visited.get(node, -1.0)}
            if not frontier:
                break
            with _Stage(walk, f"hop {hop}"):
                scored = await self._hop(iris, walk, frontier, via, seen, hop)
            kept = scored[: walk.options.edge_limit]
            visited.update(frontier)
            walk.explored += len(scored)
            for edges, by_fact in ((kept, kept_by_fact), (scored, scored_by_fact)):
                for edge in edges:
                    if edge.fact not in by_fact or by_fact[edge.fact].score < edge.score:
                        by_fact[edge.fact] = edge
            yield "hop", {"hop": hop, "frontier": len(frontier), "explored": len(scored), "kept": [e.json() for e in kept]}
            ends: dict[str, float] = {}
            for edge in kept:
                for term in (edge.fact.subject, edge.fact.object):
                    node = term.value
                    if isinstance(term, NamedNode) and edge.score > max(visited.get(node, -1.0), ends.get(node, -1.0)):
                        ends[node], via[node] = edge.score, edge
            frontier = dict(sorted(ends.items(), key=lambda item: -item[1]))
        walk.edges = list(kept_by_fact.values())
        walk.edges.sort(key=lambda e: -e.score)
        walk.trace.explored = walk.explored
        with _Stage(walk, "sources"):
            reasoning = self._reason(walk) if walk.options.reasoning and self.llm is not None and walk.edges else None
            await asyncio.gather(self._trace_sources(iris, walk, list(scored_by_fact.values())), *([reasoning] if reasoning else []))
        walk.trace.edges = [TracedEdge(e.fact, e.statement, e.score, e.hop, e.concept, e.reasoning, e.via.fact if e.via else None)
                            for e in walk.edges]  # fmt: skip
        walk.trace_sources()
        yield "edges", {"explored": walk.explored, "edges": [e.json() for e in walk.edges]}

    async def _concepts(self, walk: Walk) -> list[str]:
        """The LLM's key concepts (the question itself if it lists none); offline, the question
        and each name or value it mentions, so that each grounds on its own."""
        question = walk.trace.question
        if self.llm is None:
            found = await asyncio.to_thread(self.phrases, question)
            return list(dict.fromkeys([question, *found]))
        completion = await self.llm.complete(render("concepts", self.prompts_dir, question=question), max_tokens=512)
        walk.count(completion)
        return list(dict.fromkeys(parse_concepts(completion.text).items)) or [question]

    async def _ground(self, iris: Iris, walk: Walk) -> list[TracedSeed]:
        """The entities nearest each concept (the limit shared among them), best score kept."""
        vectors = await asyncio.to_thread(self.embedder.embed, [*walk.concepts, walk.trace.question])
        walk.concept_vectors, walk.question_vector = vectors[:-1], vectors[-1]
        per_concept = max(1, walk.options.entity_limit // len(walk.concepts))
        searches = [
            asyncio.to_thread(self.vectors.search, iris.collection, "entities", vector, per_concept)
            for vector in walk.concept_vectors
        ]
        best: dict[str, TracedSeed] = {}
        for concept, hits in zip(walk.concepts, await asyncio.gather(*searches)):
            for hit in hits:
                if hit.iri not in best or best[hit.iri].score < hit.score:
                    best[hit.iri] = TracedSeed(hit.iri, hit.score, concept)
        return sorted(best.values(), key=lambda s: -s.score)[: walk.options.entity_limit]

    async def _hop(
        self, iris: Iris, walk: Walk, frontier: dict[str, float], via: dict[str, Edge], seen: dict[Triple, float], hop: int
    ) -> list[Edge]:  # fmt: skip
        """Score the frontier's unseen edges, best first. An edge's score is the mean of its
        relevance (its path against the best-matching concept) and the weight of the frontier
        node it hangs from, so a fact reached through a strong seed or fact outranks an equally
        worded one hanging from a weak lookalike or a hub."""
        options = walk.options
        found = await asyncio.to_thread(self._edges_around, iris, list(frontier), options.triple_limit)
        weight = self._weights(frontier, via, found, options.triple_limit)
        found.sort(key=lambda pair: -weight[pair[1]])  # stable; the cut below drops the least trusted
        anchors: dict[Triple, str] = {}
        for triple, anchor in found:  # an edge scored before counts again only through a stronger node
            if weight[anchor] > seen.get(triple, -1.0):
                anchors.setdefault(triple, anchor)
        candidates = list(anchors)[: options.max_reranker_input]
        seen.update({t: weight[anchors[t]] for t in candidates})
        if not candidates:
            return []
        labels = await asyncio.to_thread(self._labels, iris, candidates)
        edges = [Edge(t, tuple(labels.get(term.value, term.value) for term in t), hop=hop, via=via.get(anchors[t]))  # type: ignore[arg-type]
                 for t in candidates]  # fmt: skip
        # a first hop is scored against the concepts; a longer path, which answers the question as
        # a whole rather than one concept of it, against the question (MetaQA 2-hop answer recall
        # 80.6 -> 82.8 on questions 0-80, 85.2 -> 86.5 on 80-200; MuSiQue graph R@5 62.4 -> 64.6)
        assert walk.concept_vectors is not None and walk.question_vector is not None
        targets, vectors = (walk.concepts, walk.concept_vectors) if hop == 1 else ([walk.trace.question], walk.question_vector[None, :])
        if options.scorer == "labels":
            scores = await asyncio.to_thread(self._score_by_labels, iris, vectors, edges)
        else:
            scores = await asyncio.to_thread(self._score, targets, [e.path_text for e in edges])
        for edge, row in zip(edges, scores.T):
            best = int(np.argmax(row))
            edge.relevance, edge.concept = float(row[best]), targets[best]
            edge.score = (edge.relevance + weight[anchors[edge.fact]]) / 2
        edges.sort(key=lambda e: -e.score)
        return edges

    @staticmethod
    def _weights(
        frontier: dict[str, float], via: dict[str, Edge], found: list[tuple[Triple, str]], limit: int
    ) -> dict[str, float]:  # fmt: skip
        """Each frontier node's weight, damped for a hub reached through an edge (a seed is what
        the question names, so it is never damped)."""
        fetched = Counter((anchor, triple.subject.value == anchor) for triple, anchor in found)
        hubs = {anchor for (anchor, _), count in fetched.items() if count >= limit}
        return {node: w * (HUB_DAMPING if node in hubs and node in via else 1.0) for node, w in frontier.items()}

    def _score(self, concepts: list[str], texts: list[str]) -> np.ndarray:
        """(concepts, texts) relevance: the cross-encoder's, or embedding cosine."""
        return np.array([self.reranker.score(concept, texts) for concept in concepts])

    def _score_by_labels(self, iris: Iris, targets: np.ndarray, edges: list[Edge]) -> np.ndarray:
        """(targets, edges) cosine, each edge's vector the normalised sum of its three terms'
        label vectors: entities' from the entity index, the rest (predicates, literals) embedded
        (and cached), plus the vector of the edge that led here (the path, as the text scorer
        reads it). A lookup instead of a model run per edge: ~10x faster, less precise (measured
        in bench/RESULTS.md)."""
        nodes = sorted({term.value for e in edges for term in (e.fact.subject, e.fact.object) if isinstance(term, NamedNode)})
        stored = self.vectors.vectors_of(iris.collection, "entities", nodes)
        texts = sorted({label for e in edges for term, label in zip(e.fact, e.labels) if term.value not in stored})
        computed = dict(zip(texts, self.embedder.embed(texts))) if texts else {}
        matrix = np.stack([
            sum(stored[t.value] if t.value in stored else computed[label] for t, label in zip(e.fact, e.labels)) for e in edges
        ])  # fmt: skip
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
        for edge, row in zip(edges, matrix):
            edge.vector = row
        paths = np.stack([e.vector + e.leading.vector if e.leading is not None and e.leading.vector is not None else e.vector
                          for e in edges])  # fmt: skip
        paths /= np.maximum(np.linalg.norm(paths, axis=1, keepdims=True), 1e-9)
        return targets @ paths.T

    def _edges_around(self, iris: Iris, frontier: list[str], limit: int) -> list[tuple[Triple, str]]:
        """Each frontier entity's edges, as subject and as object, `limit` of each, schema
        predicates left out; one query (a UNION of limited subqueries) for the whole frontier.
        Each edge comes with the frontier entity it was found from (its anchor)."""
        kg = sparql_term(iris.knowledge_graph)
        keep = " && ".join([f'!STRSTARTS(STR(?p), "{ns}")' for ns in SCHEMA_NAMESPACES] +
                           [f"?p != <{p}>" for p in SKIPPED_PREDICATES])  # fmt: skip
        branches = []
        for index, entity in enumerate(frontier):
            node = sparql_term(NamedNode(entity))
            for pattern in (f"{node} ?p ?o BIND({node} AS ?s)", f"?s ?p {node} BIND({node} AS ?o)"):
                branches.append(f"{{ SELECT ?s ?p ?o ({index} AS ?rank) WHERE {{ GRAPH {kg} {{ {pattern} }} FILTER({keep}) }} LIMIT {limit} }}")
        rows = select_terms(self.store, f"SELECT ?s ?p ?o ?rank WHERE {{ {' UNION '.join(branches)} }}")
        per_entity: list[list[Triple]] = [[] for _ in frontier]
        for row in rows:
            per_entity[int(row["rank"].value)].append(Triple(row["s"], row["p"], row["o"]))  # type: ignore[arg-type]
        return [(t, entity) for entity, edges in zip(frontier, per_entity) for t in edges]

    def _labels(self, iris: Iris, triples: list[Triple]) -> dict[str, str]:
        """rdfs:label of every IRI in the triples, in one query; literals are their own label."""
        nodes = {term.value for t in triples for term in t if isinstance(term, NamedNode)}
        labels = {term.value: term.value for t in triples for term in t if isinstance(term, Literal)}
        labels.update({node: local_name(node) for node in nodes})
        if nodes:
            rows = select(self.store, v.SPARQL_PREFIXES + f"""SELECT ?x ?label WHERE {{
                {values("x", map(NamedNode, sorted(nodes)))} GRAPH {sparql_term(iris.knowledge_graph)} {{ ?x rdfs:label ?label }} }}""")  # fmt: skip
            labels.update({row["x"]: row["label"] for row in rows})
        return labels

    # -- sources and reasoning ------------------------------------------------------------------

    async def _trace_sources(self, iris: Iris, walk: Walk, scored: list[Edge]) -> None:
        """Each scored edge's reifier, evidence sentence and chunks. The chunks of every scored
        edge, kept or not, are the candidate passages (MuSiQue: 88% of gold passages among them,
        75% among the kept edges' chunks); a chunk ranks by the best edge it supports plus its own
        similarity to the question, ties broken by the sum of all it supports. Each passage names
        that best edge (`supports`, sr:supports in the trace), kept or not: why it was returned.
        (Graph R@5 by the best edge alone: MuSiQue 64.6, 2Wiki 60.9; with the similarity: 70.7,
        64.6. A sum alone favours long chunks full of weak facts: MuSiQue 59.5 vs 62.2.)"""
        if not scored:
            return
        rows = await asyncio.to_thread(fact_sources, self.store, iris, [e.fact for e in scored])
        by_fact = {e.fact: e for e in scored} | {e.fact: e for e in walk.edges}
        support: dict[str, list[Edge]] = {}
        for row in rows:
            edge = by_fact.get(Triple(row["s"], row["p"], row["o"]))  # type: ignore[arg-type]
            if edge is None:
                continue
            edge.statement = row["st"].value
            edge.sentence = edge.sentence or (row["sentence"].value if "sentence" in row else None)
            chunk = row["chunk"].value
            if chunk not in edge.chunks:
                edge.chunks.append(chunk)
                support.setdefault(chunk, []).append(edge)
        if not support:
            return
        assert walk.question_vector is not None
        stored = await asyncio.to_thread(self.vectors.vectors_of, iris.collection, "chunks", list(support))
        best = {chunk: max(edges, key=lambda e: e.score) for chunk, edges in support.items()}
        score = {chunk: best[chunk].score + (float(stored[chunk] @ walk.question_vector) if chunk in stored else 0.0)
                 for chunk in support}  # fmt: skip
        ranked = sorted(support, key=lambda c: (-score[c], -sum(e.score for e in support[c])))[: walk.options.k]
        passages = await asyncio.to_thread(passages_of, self.store, iris, ranked, score)
        walk.passages = [replace(p, supports=best[p.chunk].fact) for p in passages]

    async def _reason(self, walk: Walk) -> None:
        """The LLM says, for each kept edge, why it matters to the question (edges it skips get none)."""
        assert self.llm is not None
        listing = "\n".join(f"{i}. {e.text}" for i, e in enumerate(walk.edges, start=1))
        prompt = render("edge_reasoning", self.prompts_dir, question=walk.trace.question, edges=listing)
        completion = await self.llm.complete(prompt, max_tokens=2048)
        walk.count(completion)
        for item in json_items(completion.text):
            if isinstance(item, dict) and isinstance(item.get("id"), int) and isinstance(item.get("reasoning"), str):
                if 1 <= item["id"] <= len(walk.edges):
                    walk.edges[item["id"] - 1].reasoning = item["reasoning"].strip() or None

    # -- synthesis ------------------------------------------------------------------------------

    def _prompt(self, walk: Walk) -> str:
        numbers = {p.chunk: i for i, p in enumerate(walk.passages, start=1)}
        facts = []
        for edge in walk.edges:
            cited = sorted({numbers[c] for c in edge.chunks if c in numbers})
            facts.append(f"- {edge.text}" + (f" [{', '.join(map(str, cited))}]" if cited else ""))
        sources = [f"[{i}] ({p.title}) {p.text}" for i, p in enumerate(walk.passages, start=1)]
        knowledge = "Facts from the knowledge graph:\n" + "\n".join(facts) + "\n\nSources:\n" + "\n\n".join(sources)
        return render("synthesis", self.prompts_dir, question=walk.trace.question, knowledge=knowledge)

    @staticmethod
    def extractive_answer(walk: Walk, facts: int = 5) -> str:
        """Offline: the best facts, each told by its evidence sentence when known, cited."""
        if not walk.edges:
            return "The knowledge graph holds nothing that connects to the question."
        numbers = {p.chunk: i for i, p in enumerate(walk.passages, start=1)}
        told: dict[str, str] = {}  # sentence -> with its citation
        for edge in walk.edges:
            cited = sorted({numbers[c] for c in edge.chunks if c in numbers})
            told.setdefault(edge.told, edge.told + (f" [{', '.join(map(str, cited))}]" if cited else ""))
            if len(told) == facts:
                break
        return " ".join(told.values())
