"""How relevant each edge of a hop is: its path against the concepts (first hop) or against
the question and its clauses (further out), by the fact index's vectors ("facts") or by the
reranker ("text"); an edge hanging from a seed the question named by an alias is also read as
the question words it, the better kept.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sparqlrag.models.embedder import Embedder
from sparqlrag.models.reranker import Reranker
from sparqlrag.retrieval.options import Scorer
from sparqlrag.retrieval.walk import Edge, path_vector
from sparqlrag.store.fact_index import FactIndex
from sparqlrag.store.facts import fact_labels
from sparqlrag.store.vector_index import unit
from sparqlrag.store.vocab import Iris


class EdgeScorer:
    def __init__(self, embedder: Embedder, reranker: Reranker, facts: FactIndex) -> None:
        self.embedder, self.reranker, self.facts = embedder, reranker, facts

    def relevance(
        self,
        iris: Iris,
        scorer: Scorer,
        targets: list[str],
        vectors: np.ndarray,
        edges: list[Edge],
        labels: dict[str, str],
        named: dict[str, str],
    ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """(targets, edges) relevance, and the vector each edge was scored by (the facts scorer;
        None with the text scorer), which a path through it reads; `named`: the seeds the
        question names by an alias, and that alias."""
        if scorer == "facts":
            scores, scored_by = self._by_facts(iris, vectors, edges, labels)
        else:
            scores, scored_by = self._by_text(targets, [e.path_text for e in edges]), [e.vector for e in edges]
        if any(edge.anchor in named for edge in edges):
            scores, scored_by = self._as_named(scorer, named, targets, vectors, edges, labels, scores, scored_by)
        return scores, scored_by

    def _by_text(self, concepts: list[str], texts: list[str]) -> np.ndarray:
        """(concepts, texts) relevance: the cross-encoder's, or embedding cosine."""
        return np.array([self.reranker.score(concept, texts) for concept in concepts])

    def _by_facts(
        self, iris: Iris, targets: np.ndarray, edges: list[Edge], labels: dict[str, str]
    ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """(targets, edges) cosine against the facts' vectors from the fact index (computed now
        only for facts written around it), and those vectors; a path, the fact that led here
        then this one, is the sum of their two vectors."""
        vectors: list[np.ndarray | None] = list(self.facts.lookup(iris, [e.fact for e in edges], labels))
        return targets @ _paths(edges, vectors).T, vectors

    def _as_named(
        self,
        scorer: Scorer,
        named: dict[str, str],
        targets: list[str],
        vectors: np.ndarray,
        edges: list[Edge],
        labels: dict[str, str],
        scores: np.ndarray,
        scored_by: list[np.ndarray | None],
    ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """`scores` with each edge of a seed the question named by an alias also scored as the
        question words it ("NATO has member states including France", where the fact index holds
        the canonical "North Atlantic Treaty Organization ..."), the better kept; with the facts
        scorer the better vector is the edge's from then on, so a path through it reads the same."""
        scores, scored_by = scores.copy(), list(scored_by)
        at = [i for i, edge in enumerate(edges) if edge.anchor in named]
        worded = [
            replace(edges[i], labels=fact_labels(edges[i].fact, labels | {edges[i].anchor: named[edges[i].anchor]}))
            for i in at
        ]
        worded_by = [scored_by[i] for i in at]
        if scorer == "facts":
            worded_by = list(unit(self.embedder.embed([e.text for e in worded])))
            alternative = vectors @ _paths(worded, worded_by).T
        else:
            alternative = self._by_text(targets, [e.path_text for e in worded])
        for column, i in enumerate(at):
            if alternative[:, column].max() > scores[:, i].max():
                scores[:, i], scored_by[i] = alternative[:, column], worded_by[column]
        return scores, scored_by


def _paths(edges: list[Edge], vectors: list[np.ndarray | None]) -> np.ndarray:
    """Each edge's path vector, its fact's vector (of `vectors`) plus the leading fact's, as a unit vector."""
    return unit(np.stack([path_vector(edge, vector) for edge, vector in zip(edges, vectors, strict=True)]))
