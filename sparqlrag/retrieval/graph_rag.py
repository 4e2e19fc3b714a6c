"""Graph RAG: answer by walking the knowledge graph from the entities a question names.

The stages (docs/architecture.md, "How a question flows"; TrustGraph's algorithm and defaults):
concepts (LLM, or the question and the names in it) -> one embedding batch -> grounding in
the entity index, and the question's nearest facts in the fact index, whose ends seed the walk
too (HippoRAG 2's query-to-fact step) -> hops: the frontier's edges as subject and object,
schema predicates dropped, labels resolved in one query, edges scored against the concepts
with the facts' indexed vectors (a longer path, the fact that led there then this one, against
the question), the best kept and their far ends the next frontier -> sources through the
reifiers (optionally beside an LLM's reasoning about the edges) -> passages -> synthesis (LLM,
or the passages' sentences and the facts that best answer, retrieval/extractive.py). Every stage
is timed and written to the collection's trace graph.

Passages, by mode (options.py, GraphMode). "evidence", the default: Document RAG's hybrid
passages, exactly, then up to `bridges` passages that PageRank ranks best among those hybrid did
not show and that state a fact the walk kept, each labelled with that fact's path. "pagerank":
personalized PageRank over the graph index from the question's recognised near facts and every
passage's hybrid score (retrieval/pagerank.py); with no seed, exactly Document RAG's hybrid
ranking. "graph": the
walk's facts re-rank the dense candidates: a passage scores its cosine to the question plus how
far the best fact it supports stands out above the median score of the facts the walk scored
(a passage supporting none keeps its cosine); "hybrid" fuses that ranking with the keyword
ranking as Document RAG's hybrid fuses the dense one. In every mode the walk chooses the facts
the answer cites, and each passage names the best of them it is evidence for (`supports`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any, cast

import numpy as np
from pyoxigraph import NamedNode, Triple

from sparqlrag.models.embedder import Embedder
from sparqlrag.models.llm import ChatModel
from sparqlrag.models.prompts import parse_concepts, render
from sparqlrag.models.reranker import Reranker
from sparqlrag.retrieval.document_rag import DocumentRag
from sparqlrag.retrieval.edge_scoring import EdgeScorer
from sparqlrag.retrieval.graph_synthesis import fact_candidates, knowledge
from sparqlrag.retrieval.judgements import reasons, recognised
from sparqlrag.retrieval.options import DEFAULT_GRAPH_MODE, DocumentRagOptions, GraphMode, GraphRagOptions
from sparqlrag.retrieval.pagerank import FactSeed, linked_facts
from sparqlrag.retrieval.passage_ranking import PassageRanking
from sparqlrag.retrieval.question import EmptyGraph, clauses
from sparqlrag.retrieval.synthesis import synthesise
from sparqlrag.retrieval.trace import Stage, TracedPageRankSeed, TracedSeed, TraceLog
from sparqlrag.retrieval.views import SeedView
from sparqlrag.retrieval.walk import (
    Edge,
    EdgeSources,
    GraphAnswer,
    Grounding,
    Retrieval,
    Walk,
    best_by_chunk,
    edge_sources,
    evidenced,
    stated_over_cooccurring,
    traced_sources,
)
from sparqlrag.store.aliases import canonicals, equivalents
from sparqlrag.store.base import QuadStore
from sparqlrag.store.fact_index import FactIndex
from sparqlrag.store.fact_sources import fact_sources
from sparqlrag.store.facts import fact_labels, labels_of, node_labels, parse_fact, walked, walked_filter
from sparqlrag.store.graph_index import GraphIndex
from sparqlrag.store.select import lexical, select_terms
from sparqlrag.store.sparql_text import sparql_term
from sparqlrag.store.vector_index import VectorIndex
from sparqlrag.store.vocab import Iris
from sparqlrag.threads import off_loop

# A node reached through an edge whose edges in one direction fill triple_limit (a year, a
# genre, a country) is a hub: what is fetched from it is an arbitrary sample, and a path through
# it says little about the question, so its weight is damped (the value's measurement is in
# bench/RESULTS.md, "Figures moved from code comments").
HUB_DAMPING = 0.6
ANSWERED = "answered"  # the last event of `_events`: the whole answer, for `answer` (never streamed)
WALKED = "walked"  # the last event of `_hops`: the edges the walk kept and scored (never streamed)
RETRIEVED = "retrieved"  # the last event of `_walk`: what the walk found, for synthesis (never streamed)
EDGE_QUERY_NODES = 8  # frontier entities per edge query (_edges_around)


class GraphRag:
    def __init__(
        self,
        *,
        store: QuadStore,
        vectors: VectorIndex,
        facts: FactIndex,
        graph: GraphIndex,
        documents: DocumentRag,
        embedder: Embedder,
        reranker: Reranker,
        traces: TraceLog,
        llm: ChatModel | None = None,
        prompts_dir: Any = None,
        phrases: Callable[[str], list[str]] | None = None,
    ) -> None:
        self.store, self.vectors, self.facts, self.embedder, self.reranker = store, vectors, facts, embedder, reranker
        self.documents, self.traces, self.graph = documents, traces, graph
        self.llm, self.prompts_dir = llm, prompts_dir
        self.phrases = phrases or (lambda question: [])
        self.scoring = EdgeScorer(embedder, reranker, facts)
        self.ranking = PassageRanking(store, vectors, graph, documents)

    # -- the public calls -----------------------------------------------------------------------

    async def retrieve(
        self,
        iris: Iris,
        question: str,
        options: GraphRagOptions | None = None,
        mode: GraphMode = DEFAULT_GRAPH_MODE,
    ) -> Retrieval:
        """Every stage but synthesis (no trace written): for passage-recall benchmarks."""
        walk = Walk.start(question, mode, options)
        found = [data[RETRIEVED] async for event, data in self._walk(iris, walk) if event == RETRIEVED]
        return cast(Retrieval, found[-1])

    async def answer(
        self,
        iris: Iris,
        question: str,
        options: GraphRagOptions | None = None,
        mode: GraphMode = DEFAULT_GRAPH_MODE,
    ) -> GraphAnswer:
        """What `stream` yields, collected: the LLM answers in one (cached) call. "graph" raises
        EmptyGraph when nothing can be grounded; the other modes then answer from passages alone."""
        walk = Walk.start(question, mode, options)
        answered = [data[ANSWERED] async for event, data in self._events(iris, walk, live=False) if event == ANSWERED]
        return cast(GraphAnswer, answered[-1])

    async def stream(
        self,
        iris: Iris,
        question: str,
        options: GraphRagOptions | None = None,
        mode: GraphMode = DEFAULT_GRAPH_MODE,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """(event, data) pairs: the explanation as stages finish ("concepts", "seeds", "hop"...,
        "edges"), the answer as "token"s, then "sources", then "done" with the trace IRI."""
        walk = Walk.start(question, mode, options)
        async for event in self._events(iris, walk, live=True):
            if event[0] != ANSWERED:
                yield event

    async def _events(self, iris: Iris, walk: Walk, *, live: bool) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """The walk, synthesis (streamed from the LLM when `live`), and the trace written; the
        answer ends it, as the event ANSWERED (which `stream` leaves out)."""
        found: Retrieval | None = None
        async for event, data in self._walk(iris, walk):
            if event == RETRIEVED:
                found = data[RETRIEVED]
            else:
                yield event, data
        assert found is not None, "a walk ends in what it found"
        with Stage(walk.trace, "synthesis"):
            question = walk.trace.question
            if self.llm is not None:
                prompt = render("synthesis", self.prompts_dir, question=question, knowledge=knowledge(found))
                async for piece in synthesise(self.llm, prompt, walk.trace, live=live):
                    yield "token", {"text": piece}
            else:
                walk.trace.answer = await off_loop(self._offline_answer, found)
                yield "token", {"text": walk.trace.answer}
        trace = walk.trace
        iri = await self.traces.write(iris, trace)
        answer = GraphAnswer(
            trace.question,
            trace.answer,
            found.concepts,
            found.seeds,
            found.explored,
            found.edges,
            found.passages,
            iri,
            trace.model,
            trace.usage,
            trace.pagerank_seeds,
            trace.sources,
        )
        yield "sources", {"sources": [s.as_json() for s in answer.source_views()]}
        yield "done", {"answer": answer.answer, "trace": answer.trace, "model": answer.model, "usage": answer.usage}
        yield ANSWERED, {ANSWERED: answer}

    def _offline_answer(self, found: Retrieval) -> str:
        """The sentences of the passages, or the facts, that best answer the question
        (extractive.py). The bridges are left out: offline, the default answers from the
        passages Document RAG gives, and the graph adds what follows from them."""
        sentences = self.documents.sentences
        shown = sentences.of_passages([p.text for p in found.passages if not p.bridge])
        return sentences.answer(found.trace.question, shown, fact_candidates(found))

    # -- the walk -------------------------------------------------------------------------------

    def scorer(self, options: GraphRagOptions) -> str:
        """What ranks the edges: the fact index's cosine ("facts"), or the reranker ("text")."""
        return f"facts:cosine:{self.embedder.model_name}" if options.scorer == "facts" else self.reranker.name

    async def _walk(self, iris: Iris, walk: Walk) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        tasks: list[asyncio.Task[Any]] = []  # what runs beside the walk, settled however it ends
        try:
            async for event in self._stages(iris, walk, tasks):
                yield event
        finally:
            for task in tasks:
                _settle(task)

    async def _stages(
        self, iris: Iris, walk: Walk, tasks: list[asyncio.Task[Any]]
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Each stage takes the values the ones before it made and hands on its own; the last
        event, RETRIEVED, carries them all."""
        trace, options = walk.trace, walk.options
        trace.scorer = self.scorer(options)
        with Stage(trace, "concepts"):
            concepts = trace.concepts = await self._concepts(walk)
        yield "concepts", {"concepts": concepts}
        with Stage(trace, "grounding"):
            grounding = await self._ground(iris, trace.question, concepts, options)
            trace.seeds = grounding.seeds
        hybrid = None
        if walk.mode == "evidence":  # Document RAG's passages (the question's embedding is cached now), beside the hops
            asked = DocumentRagOptions(k=options.k)
            hybrid = asyncio.create_task(self.documents.retrieve(iris, trace.question, asked))
            tasks.append(hybrid)
        if not grounding.seeds and walk.mode == "graph":
            raise EmptyGraph(f"collection {iris.collection!r} has no entities to answer from: ingest documents first")
        yield "seeds", {"seeds": [SeedView.traced(s).as_json() for s in grounding.seeds]}
        async for event, data in self._hops(iris, walk, concepts, grounding):
            if event == WALKED:
                kept, scored, explored = data[WALKED]
            else:
                yield event, data
        trace.explored = explored
        with Stage(trace, "sources"):
            said: dict[int, str | None] = {}
            if options.reasoning and self.llm and kept:
                sources, said = await asyncio.gather(
                    self._sources(iris, scored), reasons(self.llm, self.prompts_dir, walk, kept)
                )
            else:
                sources = await self._sources(iris, scored)
            kept, scored = evidenced(kept, scored, sources, said)
        carried: dict[str, tuple[str, ...]] = {}
        ranking = None
        if hybrid is not None:
            with Stage(trace, "passages"):
                best = best_by_chunk(scored)
                passages = [replace(p, supports=best[p.chunk].fact if p.chunk in best else None) for p in await hybrid]
            if options.bridges and grounding.near_facts:
                with Stage(trace, "bridges"):
                    near = await self._near(walk, grounding)
                    bridges, carried, ranking = await self.ranking.pagerank(
                        iris, walk, near, scored, kept, shown=passages
                    )
                passages = passages + bridges
        elif walk.mode == "pagerank":
            with Stage(trace, "pagerank"):
                near = await self._near(walk, grounding)
                passages, carried, ranking = await self.ranking.pagerank(iris, walk, near, scored, kept)
        else:
            with Stage(trace, "passages"):
                passages = await self.ranking.lifted(iris, walk, grounding, scored)
        if ranking is not None:
            trace.pagerank_seeds = [TracedPageRankSeed(s.entity, s.weight, s.facts) for s in ranking.seeds]
        trace.edges = [e.traced() for e in kept]
        trace.sources = traced_sources(passages, ranking, carried)
        yield "edges", {"explored": explored, "edges": [e.view().as_json() for e in kept]}
        yield RETRIEVED, {RETRIEVED: Retrieval(trace, concepts, grounding, explored, kept, passages, ranking)}

    async def _hops(
        self, iris: Iris, walk: Walk, concepts: list[str], grounding: Grounding
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """A "hop" event as each hop ends; the last, WALKED, carries the kept edges (best first,
        one per fact), every edge scored (the best per fact: their chunks are the passages') and
        how many were explored."""
        options = walk.options
        # the frontier's nodes, each weighted by how it was reached: a seed by its grounding
        # score, a node further out by the score of the best kept edge that led to it. A node
        # (or edge) met again through a stronger path is walked (scored) again with that weight.
        frontier: dict[str, float] = {s.entity: s.score for s in grounding.seeds}
        via: dict[str, Edge] = {}  # node -> the kept edge that gave it its weight
        visited: dict[str, float] = {}
        seen: dict[Triple, float] = {}
        kept_by_fact: dict[Triple, Edge] = {}
        scored_by_fact: dict[Triple, Edge] = {}  # every edge scored, kept or not
        explored = 0
        for hop in range(1, options.max_path_length + 1):
            frontier = {node: weight for node, weight in frontier.items() if weight > visited.get(node, -1.0)}
            if not frontier:
                break
            with Stage(walk.trace, f"hop {hop}"):
                scored = await self._hop(iris, walk, concepts, grounding, frontier, via, seen, hop)
            kept = scored[: options.edge_limit]
            visited.update(frontier)
            explored += len(scored)
            for edges, by_fact in ((kept, kept_by_fact), (scored, scored_by_fact)):
                for edge in edges:
                    if edge.fact not in by_fact or by_fact[edge.fact].score < edge.score:
                        by_fact[edge.fact] = edge
            yield (
                "hop",
                {
                    "hop": hop,
                    "frontier": len(frontier),
                    "explored": len(scored),
                    "kept": [e.view().as_json() for e in kept],
                },
            )
            ends: dict[str, float] = {}
            for edge in kept:
                for term in (edge.fact.subject, edge.fact.object):
                    node = lexical(term)
                    if isinstance(term, NamedNode) and edge.score > max(visited.get(node, -1.0), ends.get(node, -1.0)):
                        ends[node], via[node] = edge.score, edge
            frontier = dict(sorted(ends.items(), key=lambda item: -item[1]))
        best_kept = stated_over_cooccurring(sorted(kept_by_fact.values(), key=lambda e: -e.score))
        yield WALKED, {WALKED: (best_kept, list(scored_by_fact.values()), explored)}

    async def _near(self, walk: Walk, grounding: Grounding) -> list[FactSeed]:
        """The question's nearest facts that PageRank starts from: those the LLM recognises as
        bearing on it (HippoRAG 2's recognition memory), else those naming an entity the
        question's names link to."""
        if self.llm is not None and grounding.near_facts:
            return await recognised(self.llm, self.prompts_dir, walk, grounding.near_facts)
        return linked_facts(grounding.near_facts, set(grounding.linked))

    async def _concepts(self, walk: Walk) -> list[str]:
        """The LLM's key concepts (the question itself if it lists none); offline, the question
        and each name or value it mentions, so that each grounds on its own."""
        question = walk.trace.question
        if self.llm is None:
            found = await off_loop(self.phrases, question)
            return list(dict.fromkeys([question, *clauses(question), *found]))
        completion = await self.llm.complete(render("concepts", self.prompts_dir, question=question), max_tokens=512)
        walk.trace.count(completion)
        return list(dict.fromkeys(parse_concepts(completion.text).items)) or [question]

    async def _ground(self, iris: Iris, question: str, concepts: list[str], options: GraphRagOptions) -> Grounding:
        """The entities nearest each concept (the limit shared among them), and the ends of the
        facts nearest the question (each seeded at its fact's score); best score kept."""
        path_targets = [question, *clauses(question)]
        vectors = await off_loop(self.embedder.embed, [*concepts, *path_targets])
        concept_vectors, path_vectors = vectors[: len(concepts)], vectors[len(concepts) :]
        per_concept = max(1, options.entity_limit // len(concepts))
        entities = off_loop(self.vectors.search_many, iris.collection, "entities", concept_vectors, per_concept)
        facts = off_loop(self.vectors.search, iris.collection, "facts", path_vectors[0], options.fact_seeds)
        by_concept, nearest_facts = await asyncio.gather(entities, facts)
        best: dict[str, TracedSeed] = {}

        def offer(seed: TracedSeed) -> None:
            if seed.entity not in best or best[seed.entity].score < seed.score:
                best[seed.entity] = seed

        grounded = [hit.iri for hits in by_concept for hit in hits]
        facts_named = [parse_fact(hit.payload["fact"]) for hit in nearest_facts] if options.fact_seeds else []
        ends = [end.value for fact in facts_named for end in (fact.subject, fact.object) if isinstance(end, NamedNode)]
        aliases, same, names = await asyncio.gather(  # resolution's aliases, a loaded graph's owl:sameAs, names
            off_loop(canonicals, self.store, iris, grounded),
            off_loop(equivalents, self.store, iris, grounded, options.entity_limit),
            off_loop(node_labels, self.store, iris, [*grounded, *ends]),  # as the trace names them
        )
        linked = frozenset(  # the entity each name in the question links to (its nearest)
            aliases.get(hits[0].iri, hits[0].iri)
            for concept, hits in zip(concepts, by_concept)
            if hits and concept not in path_targets
        )
        for concept, hits in zip(concepts, by_concept):
            for hit in hits:  # a name that is an alias ("W3C", an altLabel) grounds on the thing it names
                alias = hit.payload.get("alias") or (hit.payload.get("label") if hit.iri in aliases else None)
                offer(TracedSeed(aliases.get(hit.iri, hit.iri), hit.score, concept, alias=alias))
                for other in same.get(hit.iri, []):  # a loaded graph's owl:sameAs: the same thing
                    offer(TracedSeed(other, hit.score, concept))
        near_facts = []
        for hit, fact in zip(nearest_facts, facts_named):
            near_facts.append(FactSeed(fact, hit.iri, hit.score, str(hit.payload.get("text", ""))))
            for end in (fact.subject, fact.object):
                if isinstance(end, NamedNode):
                    offer(TracedSeed(end.value, hit.score, question, fact))
        seeds = sorted(best.values(), key=lambda s: -s.score)[: options.entity_limit + 2 * options.fact_seeds]
        if others := [s.entity for s in seeds if s.entity not in names]:  # an alias's or sameAs's target
            names |= await off_loop(node_labels, self.store, iris, others)
        seeds = [replace(s, label=names[s.entity]) for s in seeds]
        return Grounding(seeds, concept_vectors, path_targets, path_vectors, near_facts, linked)

    async def _hop(
        self,
        iris: Iris,
        walk: Walk,
        concepts: list[str],
        grounding: Grounding,
        frontier: dict[str, float],
        via: dict[str, Edge],
        seen: dict[Triple, float],
        hop: int,
    ) -> list[Edge]:
        """Score the frontier's unseen edges, best first. An edge's score is the mean of its
        relevance (its path against the best-matching concept) and the weight of the frontier
        node it hangs from, so a fact reached through a strong seed or fact outranks an equally
        worded one hanging from a weak lookalike or a hub."""
        options = walk.options
        found = await off_loop(self._edges_around, iris, list(frontier), options.triple_limit)
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
        labels = await off_loop(labels_of, self.store, iris, candidates)
        found_edges = [
            Edge(t, fact_labels(t, labels), hop=hop, via=via.get(anchors[t]), anchor=anchors[t]) for t in candidates
        ]
        # a first hop is scored against the concepts; a longer path, which answers the question as
        # a whole rather than one concept of it, against the question, or one of its clauses when
        # it asks several things
        if hop == 1:
            targets, vectors = concepts, grounding.concept_vectors
        else:
            targets, vectors = grounding.path_targets, grounding.path_vectors
        named = {s.entity: s.alias for s in grounding.seeds if s.alias}
        scores, scored_by = await off_loop(
            self.scoring.relevance, iris, options.scorer, targets, vectors, found_edges, labels, named
        )
        edges = []
        for edge, row, vector in zip(found_edges, scores.T, scored_by, strict=True):
            best = int(np.argmax(row))
            relevance = float(row[best])
            score = (relevance + weight[anchors[edge.fact]]) / 2
            edges.append(replace(edge, relevance=relevance, concept=targets[best], score=score, vector=vector))
        edges.sort(key=lambda e: -e.score)
        return edges

    @staticmethod
    def _weights(
        frontier: dict[str, float], via: dict[str, Edge], found: list[tuple[Triple, str]], limit: int
    ) -> dict[str, float]:
        """Each frontier node's weight, damped for a hub reached through an edge (a seed is what
        the question names, so it is never damped)."""
        fetched = Counter((anchor, lexical(triple.subject) == anchor) for triple, anchor in found)
        hubs = {anchor for (anchor, _), count in fetched.items() if count >= limit}
        return {node: w * (HUB_DAMPING if node in hubs and node in via else 1.0) for node, w in frontier.items()}

    def _edges_around(self, iris: Iris, frontier: list[str], limit: int) -> list[tuple[Triple, str]]:
        """Each frontier entity's edges, as subject and as object, `limit` of each, schema
        predicates left out: a UNION of limited subqueries per EDGE_QUERY_NODES entities (a
        UNION's cost grows faster than its branches). Each edge comes with the frontier entity it was found from."""
        kg, keep = sparql_term(iris.knowledge_graph), walked_filter()
        per_entity: list[list[Triple]] = [[] for _ in frontier]
        for start in range(0, len(frontier), EDGE_QUERY_NODES):
            branches = []
            for index, entity in enumerate(frontier[start : start + EDGE_QUERY_NODES], start=start):
                node = sparql_term(NamedNode(entity))
                for pattern in (f"{node} ?p ?o BIND({node} AS ?s)", f"?s ?p {node} BIND({node} AS ?o)"):
                    branches.append(
                        f"{{ SELECT ?s ?p ?o ({index} AS ?rank) WHERE {{ GRAPH {kg} {{ {pattern} }} FILTER({keep}) }} "
                        f"LIMIT {limit} }}"
                    )
            for row in select_terms(self.store, f"SELECT ?s ?p ?o ?rank WHERE {{ {' UNION '.join(branches)} }}"):
                fact = Triple(row["s"], row["p"], row["o"])  # type: ignore[arg-type]
                if walked(fact):  # (the filter cannot say "no triple term" to an RDF 1.1 store)
                    per_entity[int(lexical(row["rank"]))].append(fact)
        return [(t, entity) for entity, edges in zip(frontier, per_entity) for t in edges]

    # -- sources and reasoning ------------------------------------------------------------------

    async def _sources(self, iris: Iris, scored: list[Edge]) -> dict[Triple, EdgeSources]:
        """Each scored fact's reifier, evidence sentence and chunks (kept or not: any of them may
        lift a passage)."""
        if not scored:
            return {}
        rows = await off_loop(fact_sources, self.store, iris, [e.fact for e in scored])
        return edge_sources(rows, {e.fact for e in scored})


def _settle(task: asyncio.Task[Any]) -> None:
    """A task the walk no longer waits for: cancelled if running, its failure taken if it failed
    (the walk's own failure is the one to report)."""
    if not task.cancel() and not task.cancelled():
        task.exception()
