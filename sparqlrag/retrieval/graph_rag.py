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
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any, Unpack, cast

from pyoxigraph import NamedNode, Triple

from sparqlrag.models.embedder import Embedder
from sparqlrag.models.llm import ChatModel
from sparqlrag.models.prompts import parse_concepts, render
from sparqlrag.models.reranker import Reranker
from sparqlrag.retrieval.document_rag import DocumentRag
from sparqlrag.retrieval.edge_scoring import EdgeScorer
from sparqlrag.retrieval.graph_synthesis import fact_candidates, knowledge
from sparqlrag.retrieval.hops import WALKED, Hops
from sparqlrag.retrieval.judgements import reasons, recognised
from sparqlrag.retrieval.options import DEFAULT_GRAPH_MODE, DocumentRagOptions, GraphMode, GraphRagOptions
from sparqlrag.retrieval.pagerank import FactSeed, linked_facts
from sparqlrag.retrieval.passage_ranking import PassageRanking
from sparqlrag.retrieval.question import EmptyGraph, clauses
from sparqlrag.retrieval.scope import GraphScope, Scope
from sparqlrag.retrieval.synthesis import synthesise
from sparqlrag.retrieval.trace import Framing, Stage, TracedPageRankSeed, TracedSeed, TraceLog
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
    traced_sources,
)
from sparqlrag.store.aliases import canonicals, equivalents
from sparqlrag.store.base import QuadStore
from sparqlrag.store.fact_index import FactIndex
from sparqlrag.store.fact_sources import fact_sources, facts_stated_in
from sparqlrag.store.facts import node_labels, parse_fact
from sparqlrag.store.graph_index import GraphIndex
from sparqlrag.store.select import lexical
from sparqlrag.store.vector_index import VectorIndex
from sparqlrag.store.vocab import Iris
from sparqlrag.threads import off_loop

SCOPED_FETCH = 10  # a scoped grounding asks the indexes for this many times the seeds, then keeps the scope's
ANSWERED = "answered"  # the last event of `_events`: the whole answer, for `answer` (never streamed)
RETRIEVED = "retrieved"  # the last event of `_walk`: what the walk found, for synthesis (never streamed)


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
        self.hops = Hops(store, EdgeScorer(embedder, reranker, facts))
        self.ranking = PassageRanking(store, vectors, graph, documents)

    # -- the public calls -----------------------------------------------------------------------

    async def retrieve(
        self,
        iris: Iris,
        question: str,
        options: GraphRagOptions | None = None,
        mode: GraphMode = DEFAULT_GRAPH_MODE,
        **framing: Unpack[Framing],
    ) -> Retrieval:
        """Every stage but synthesis (no trace written): for passage-recall benchmarks."""
        walk = await self._start(iris, question, options, mode, framing)
        found = [data[RETRIEVED] async for event, data in self._walk(iris, walk) if event == RETRIEVED]
        return cast(Retrieval, found[-1])

    async def answer(
        self,
        iris: Iris,
        question: str,
        options: GraphRagOptions | None = None,
        mode: GraphMode = DEFAULT_GRAPH_MODE,
        **framing: Unpack[Framing],
    ) -> GraphAnswer:
        """What `stream` yields, collected: the LLM answers in one (cached) call. "graph" raises
        EmptyGraph when nothing can be grounded; the other modes then answer from passages alone."""
        walk = await self._start(iris, question, options, mode, framing)
        answered = [data[ANSWERED] async for event, data in self._events(iris, walk, live=False) if event == ANSWERED]
        return cast(GraphAnswer, answered[-1])

    async def stream(
        self,
        iris: Iris,
        question: str,
        options: GraphRagOptions | None = None,
        mode: GraphMode = DEFAULT_GRAPH_MODE,
        **framing: Unpack[Framing],
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """(event, data) pairs: the explanation as stages finish ("concepts", "seeds", "hop"...,
        "edges"), the answer as "token"s, then "sources", then "done" with the trace IRI."""
        walk = await self._start(iris, question, options, mode, framing)
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

    async def _start(
        self, iris: Iris, question: str, options: GraphRagOptions | None, mode: GraphMode, framing: Framing
    ) -> Walk:
        scope = await self._within(iris, framing.get("scope"))
        return Walk.start(question, mode, options, scope, framing.get("follow_up"))

    async def _within(self, iris: Iris, scope: Scope | None) -> GraphScope | None:
        """The scope as the walk keeps within it: the facts its chunks state, and their entities."""
        if scope is None:
            return None
        rows = await off_loop(facts_stated_in, self.store, iris, scope.chunks)
        facts = frozenset(Triple(row["s"], row["p"], row["o"]) for row in rows)  # type: ignore[arg-type]
        entities = frozenset(
            end.value for fact in facts for end in (fact.subject, fact.object) if isinstance(end, NamedNode)
        )
        return GraphScope(scope, facts, frozenset(lexical(row["st"]) for row in rows), entities)

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
            grounding = await self._ground(iris, trace.question, concepts, options, walk.scope)
            trace.seeds = grounding.seeds
        hybrid = None
        if walk.mode == "evidence":  # Document RAG's passages (the question's embedding is cached now), beside the hops
            asked = DocumentRagOptions(k=options.k)
            within = None if walk.scope is None else walk.scope.scope
            hybrid = asyncio.create_task(self.documents.retrieve(iris, trace.question, asked, scope=within))
            tasks.append(hybrid)
        if not grounding.seeds and walk.mode == "graph":
            raise EmptyGraph(f"collection {iris.collection!r} has no entities to answer from: ingest documents first")
        yield "seeds", {"seeds": [SeedView.traced(s).as_json() for s in grounding.seeds]}
        async for event, data in self.hops.walk(iris, walk, concepts, grounding):
            if event == WALKED:
                kept, scored, explored = data[WALKED]
            else:
                yield event, data
        trace.explored = explored
        with Stage(trace, "sources"):
            said: dict[int, str | None] = {}
            if options.reasoning and self.llm and kept:
                sources, said = await asyncio.gather(
                    self._sources(iris, walk, scored), reasons(self.llm, self.prompts_dir, walk, kept)
                )
            else:
                sources = await self._sources(iris, walk, scored)
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

    async def _ground(
        self, iris: Iris, question: str, concepts: list[str], options: GraphRagOptions, scope: GraphScope | None
    ) -> Grounding:
        """The entities nearest each concept (the limit shared among them), and the ends of the
        facts nearest the question (each seeded at its fact's score); best score kept. In a
        scope, of the entities and facts its chunks state (SCOPED_FETCH times as many asked)."""
        path_targets = [question, *clauses(question)]
        vectors = await off_loop(self.embedder.embed, [*concepts, *path_targets])
        concept_vectors, path_vectors = vectors[: len(concepts)], vectors[len(concepts) :]
        per_concept = max(1, options.entity_limit // len(concepts))
        fetched = 1 if scope is None else SCOPED_FETCH
        entities = off_loop(
            self.vectors.search_many, iris.collection, "entities", concept_vectors, per_concept * fetched
        )
        facts = off_loop(self.vectors.search, iris.collection, "facts", path_vectors[0], options.fact_seeds * fetched)
        by_concept, nearest_facts = await asyncio.gather(entities, facts)
        if scope is not None:
            nearest_facts = [hit for hit in nearest_facts if hit.iri in scope.statements][: options.fact_seeds]
        best: dict[str, TracedSeed] = {}

        def offer(seed: TracedSeed) -> None:
            if scope is not None and seed.entity not in scope.entities:
                return
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
        if scope is not None:  # (a hit on an alias stands for the entity it names)
            by_concept = [
                [hit for hit in hits if aliases.get(hit.iri, hit.iri) in scope.entities][:per_concept]
                for hits in by_concept
            ]
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

    # -- sources and reasoning ------------------------------------------------------------------

    async def _sources(self, iris: Iris, walk: Walk, scored: list[Edge]) -> dict[Triple, EdgeSources]:
        """Each scored fact's reifier, evidence sentence and chunks (kept or not: any of them may
        lift a passage); in a scope, its chunks there alone."""
        if not scored:
            return {}
        rows = await off_loop(fact_sources, self.store, iris, [e.fact for e in scored])
        if (chunks := walk.chunks) is not None:
            rows = [row for row in rows if lexical(row["chunk"]) in chunks]
        return edge_sources(rows, {e.fact for e in scored})


def _settle(task: asyncio.Task[Any]) -> None:
    """A task the walk no longer waits for: cancelled if running, its failure taken if it failed
    (the walk's own failure is the one to report)."""
    if not task.cancel() and not task.cancelled():
        task.exception()
