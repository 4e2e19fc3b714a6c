"""The walk's hops: from the frontier's entities, their edges fetched, scored against the
question and the best kept, whose far ends are the next frontier (graph_rag.py's module
docstring tells the whole walk). A scoped walk fetches only the facts the scope's chunks state.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import numpy as np
from pyoxigraph import NamedNode, Triple

from sparqlrag.retrieval.edge_scoring import EdgeScorer
from sparqlrag.retrieval.trace import Stage
from sparqlrag.retrieval.walk import Edge, Grounding, Walk, stated_over_cooccurring
from sparqlrag.store.base import QuadStore
from sparqlrag.store.facts import fact_labels, labels_of, walked, walked_filter
from sparqlrag.store.select import lexical, select_terms
from sparqlrag.store.sparql_text import sparql_term
from sparqlrag.store.vocab import Iris
from sparqlrag.threads import off_loop

# A node reached through an edge whose edges in one direction fill triple_limit (a year, a
# genre, a country) is a hub: what is fetched from it is an arbitrary sample, and a path through
# it says little about the question, so its weight is damped (the value's measurement is in
# bench/RESULTS.md, "Figures moved from code comments").
HUB_DAMPING = 0.6
WALKED = "walked"  # the last event of `Hops.walk`: the edges the walk kept and scored (never streamed)
EDGE_QUERY_NODES = 8  # frontier entities per edge query (_edges_around)


class Hops:
    def __init__(self, store: QuadStore, scoring: EdgeScorer) -> None:
        self.store, self.scoring = store, scoring

    async def walk(
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
        if walk.scope is not None:  # only what the scope's chunks state
            found = [(fact, anchor) for fact, anchor in found if fact in walk.scope.facts]
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
