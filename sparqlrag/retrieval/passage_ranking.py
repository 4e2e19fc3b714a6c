"""How Graph RAG ranks the passages it shows, in the modes that do not take Document RAG's as
they are (graph_rag.py's module docstring says what each mode does): "graph" and "hybrid" lift
dense candidates by the walk's facts (`lifted`); "pagerank" ranks them by personalized PageRank
over the graph index, and "evidence" takes its bridges from the same ranking (`pagerank`).
"""

from __future__ import annotations

import statistics
from dataclasses import replace

import numpy as np

from sparqlrag.retrieval.document_rag import DocumentRag, Passage, distinct, passages_of
from sparqlrag.retrieval.pagerank import FactSeed, Ranking, entity_seeds, rank
from sparqlrag.retrieval.walk import Edge, Grounding, Walk, best_by_chunk, path_to
from sparqlrag.store.base import QuadStore
from sparqlrag.store.graph_index import GraphIndex
from sparqlrag.store.vector_index import VectorIndex
from sparqlrag.store.vocab import Iris
from sparqlrag.threads import off_loop

CANDIDATES = 50  # dense and keyword candidates a passage ranking starts from (as Document RAG's hybrid)


class PassageRanking:
    def __init__(self, store: QuadStore, vectors: VectorIndex, graph: GraphIndex, documents: DocumentRag) -> None:
        self.store, self.vectors, self.graph, self.documents = store, vectors, graph, documents

    async def lifted(self, iris: Iris, walk: Walk, grounding: Grounding, scored: list[Edge]) -> list[Passage]:
        """The k passages: dense candidates and the chunks of scored edges, each scored by its
        cosine plus its best fact's excess over the walk's median fact score (module docstring);
        in hybrid mode fused with the keyword ranking."""
        collection, question, within = iris.collection, walk.trace.question, walk.chunks
        best = best_by_chunk(scored)
        dense = await off_loop(
            self.vectors.ranking, collection, "chunks", grounding.question_vector, CANDIDATES, within
        )
        cosine = dict(dense)
        outside = [chunk for chunk in best if chunk not in cosine]
        stored = await off_loop(self.vectors.vectors_of, collection, "chunks", outside) if outside else {}
        cosine |= {
            chunk: float(vector @ grounding.question_vector) / max(float(np.linalg.norm(vector)), 1e-9)
            for chunk, vector in stored.items()
        }
        median = statistics.median(e.score for e in best.values()) if best else 0.0
        lifted = {
            chunk: score + (max(0.0, best[chunk].score - median) if chunk in best else 0.0)
            for chunk, score in cosine.items()
        }
        order = sorted(lifted, key=lambda chunk: -lifted[chunk])[:CANDIDATES]
        scores = lifted
        if walk.mode == "hybrid":
            fused = await self.documents.fused_with_keywords(
                iris, question, order, candidates=CANDIDATES, within=within
            )
            order, scores = [chunk for chunk, _ in fused], dict(fused)
        passages = await off_loop(passages_of, self.store, iris, order, scores)
        return [
            replace(p, supports=best[p.chunk].fact if p.chunk in best else None) for p in passages[: walk.options.k]
        ]

    async def pagerank(
        self,
        iris: Iris,
        walk: Walk,
        near: list[FactSeed],
        scored: list[Edge],
        kept: list[Edge],
        shown: list[Passage] | None = None,
    ) -> tuple[list[Passage], dict[str, tuple[str, ...]], Ranking]:
        """The k passages by personalized PageRank (retrieval/pagerank.py) from the entities of the
        question's `near` facts (those recognised as bearing on it), each with the fact of
        the walk it supports best; and per passage, the reifiers of its facts that name the
        entities that carried its score. Given the passages `shown`, the bridges instead: up to
        `bridges` of PageRank's best that are not shown (nor copies of those shown) and support a
        fact the walk `kept`, each labelled with that fact's path."""
        collection, k = iris.collection, walk.options.k
        view = await off_loop(self.graph.view, collection)
        seeds = entity_seeds(view, near)
        # PageRank seeds every passage; with nothing to rank from, the answer is Document RAG's hybrid
        candidates = max(CANDIDATES, view.passages) if seeds and not view.empty else CANDIDATES
        within = walk.chunks
        hybrid = await self.documents.hybrid_ranking(iris, walk.trace.question, candidates=candidates, within=within)
        wanted = k if shown is None else walk.options.bridges
        ranking = await off_loop(rank, view, seeds, hybrid, len(shown or ()) + wanted, within)
        if shown is None:
            best = best_by_chunk(scored)
            passages = await off_loop(passages_of, self.store, iris, ranking.order[:CANDIDATES], ranking.scores)
            passages = [replace(p, supports=best[p.chunk].fact if p.chunk in best else None) for p in passages]
            passages = distinct(passages, k)
        else:  # (only the chunks of kept facts are read: a bridge must state one)
            stating = best_by_chunk(kept) if ranking.seeds else {}
            chunks = {p.chunk for p in shown}
            order = [chunk for chunk in ranking.order if chunk not in chunks][:CANDIDATES]
            found = await off_loop(passages_of, self.store, iris, [c for c in order if c in stating], ranking.scores)
            reached = [replace(p, supports=stating[p.chunk].fact, bridge=path_to(stating[p.chunk])) for p in found]
            passages = distinct([*shown, *reached], len(shown) + wanted)[len(shown) :]
        mentions = await off_loop(self.graph.mentions_in, collection, [p.chunk for p in passages])
        carried = {
            p.chunk: tuple(
                sorted(
                    {
                        m.statement
                        for m in mentions
                        if m.chunk == p.chunk and {m.subject, m.object} & set(ranking.carriers.get(p.chunk, ()))
                    }
                )
            )
            for p in passages
        }
        return passages, carried, ranking
