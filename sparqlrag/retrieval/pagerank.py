"""Passages by personalized PageRank over the graph index: HippoRAG 2's retrieval
(Gutierrez et al. 2025; OSU-NLP-Group/HippoRAG, `graph_search_with_fact_entities`, `run_ppr`)
with the reference code's settings (`utils/config_utils.py`): damping 0.5, passage node weight
0.05, 5 linked facts and 5 linked entities.

Seeds: each of the question's nearest facts gives its two entities the fact's score divided by
how many passages name the entity; an entity's weight is the mean over its facts, and the 5
heaviest are kept. Every passage is seeded with its retrieval score, min-max normalised over all
passages, times 0.05. PageRank (igraph's PRPACK, which the reference calls) then ranks the
passages.

Recognition memory: with an LLM, the reference's filter (GraphRag._recognised) keeps the near
facts that bear on the question. Without one the reference has nothing; the near facts of a
weak fact index then seed entities the question is not about (measured: 2Wiki-101 recall@5 67.1
and MuSiQue-100 65.9, below hybrid's 69.3 and 63.1). Offline, a near fact is recognised when it
names an entity that one of the question's names links to (`linked_facts`), as HippoRAG's first
version linked the question's named entities to the graph. That choice was made between these
two measured options on the shared sets (bench/RESULTS.md): those figures chose it, and the
held-out sets are its test.

Two departures from the reference, each for a reason of principle rather than a figure:
- The passage scores are the hybrid ranking's (dense + keyword over every passage, fused by
  reciprocal rank as Document RAG fuses them), not dense alone; with no seed the answer is
  Document RAG's hybrid ranking itself, from the same call (the reference returns its dense
  ranking then).
- Fact scores are divided by the best fact's cosine (negative ones count 0), not min-max
  normalised over every fact: the vector index returns the nearest facts, not the farthest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyoxigraph import NamedNode, Triple

from sparqlrag.store.graph_index import GraphView

DAMPING = 0.5  # HippoRAG's damping
PASSAGE_NODE_WEIGHT = 0.05  # HippoRAG's passage_node_weight
LINKED_ENTITIES = 5  # HippoRAG's linking_top_k, applied to the entities
CARRIERS = 3  # entities named per passage as what carried its score (the trace)


@dataclass(frozen=True)
class FactSeed:
    """One of the question's nearest facts."""

    fact: Triple
    statement: str
    score: float  # cosine to the question
    text: str  # the fact in words, as the fact index embedded it


@dataclass(frozen=True)
class EntitySeed:
    entity: str
    weight: float  # its share of the reset vector, before PageRank normalises it
    facts: tuple[Triple, ...]  # the near facts that name it


@dataclass(frozen=True)
class Ranking:
    """The passages best first, their PageRank (or, with no seed, hybrid) scores, the seeds,
    and per passage the entities whose rank flowed into it most."""

    order: list[str]
    scores: dict[str, float]
    seeds: list[EntitySeed]
    carriers: dict[str, tuple[str, ...]]


def linked_facts(facts: list[FactSeed], linked: set[str]) -> list[FactSeed]:
    """Recognition without an LLM: the near facts that name an entity a name in the question
    links to (HippoRAG's first version seeded PageRank with the question's named entities, linked
    to the graph's by their vectors). A question that names nothing keeps none, so PageRank has
    no entity to start from and the answer is Document RAG's hybrid ranking."""
    return [
        seed
        for seed in facts
        if any(isinstance(end, NamedNode) and end.value in linked for end in (seed.fact.subject, seed.fact.object))
    ]


def entity_seeds(view: GraphView, facts: list[FactSeed]) -> list[EntitySeed]:
    """The 5 heaviest entities of the near facts that the graph holds."""
    best = max((f.score for f in facts), default=0.0)
    if best <= 0:
        return []
    shares: dict[str, list[float]] = {}
    named: dict[str, list[Triple]] = {}
    for seed in facts:
        score = max(seed.score, 0.0) / best
        for end in (seed.fact.subject, seed.fact.object):
            if isinstance(end, NamedNode) and end.value in view.vertex:
                passages = int(view.in_passages[view.vertex[end.value]])
                shares.setdefault(end.value, []).append(score / passages if passages else score)
                named.setdefault(end.value, []).append(seed.fact)
    seeds = [EntitySeed(e, float(np.mean(s)), tuple(named[e])) for e, s in shares.items() if np.mean(s) > 0]
    return sorted(seeds, key=lambda s: -s.weight)[:LINKED_ENTITIES]


def rank(
    view: GraphView,
    seeds: list[EntitySeed],
    hybrid: list[tuple[str, float]],
    explain: int = 0,
    within: frozenset[str] | None = None,
) -> Ranking:
    """Personalized PageRank from the seeds and every passage's hybrid score (`hybrid`: the
    hybrid ranking over all passages, best first); with no seed (or no edge), the hybrid ranking
    as it is. `explain`: how many of the best passages get carriers. `within`: the passages a
    scope allows (rank spreads over the whole graph; only these are ranked)."""
    if not seeds or view.empty:
        return Ranking([chunk for chunk, _ in hybrid], dict(hybrid), [], {})
    passages = view.names[: view.passages]
    fused = np.zeros(view.passages)  # a passage neither search ranks scores 0, as the lowest
    hybrid_rank: dict[str, int] = {}
    for position, (chunk, score) in enumerate(hybrid):
        hybrid_rank[chunk] = position
        if view.vertex.get(chunk, view.passages) < view.passages:
            fused[view.vertex[chunk]] = score
    low, high = float(fused.min()), float(fused.max())
    reset = np.zeros(len(view.names))
    if high > low:  # min-max normalised, as the reference normalises its dense scores
        reset[: view.passages] = PASSAGE_NODE_WEIGHT * (fused - low) / (high - low)
    for seed in seeds:
        reset[view.vertex[seed.entity]] = seed.weight
    ranks = np.array(
        view.graph.personalized_pagerank(
            damping=DAMPING, directed=False, weights="weight", reset=reset.tolist(), implementation="prpack"
        )
    )
    # ties (passages nothing reached) keep the hybrid ranking's order, then the graph's
    order = sorted(range(view.passages), key=lambda i: (-ranks[i], hybrid_rank.get(passages[i], len(hybrid)), i))
    if within is not None:
        order = [i for i in order if passages[i] in within]
    outside = [chunk for chunk, _ in hybrid if chunk not in view.vertex]  # (an index written before the graph's)
    return Ranking(
        [passages[i] for i in order] + outside,
        {passages[i]: float(ranks[i]) for i in order},
        seeds,
        {passages[i]: carriers(view, ranks, i) for i in order[:explain]},
    )


def carriers(view: GraphView, ranks: np.ndarray, node: int) -> tuple[str, ...]:
    """The entities next to a passage whose rank flowed into it most: each neighbour's rank times
    the share of its edge weight that leads here."""
    graph = view.graph
    weights: dict[int, float] = {}
    for edge in graph.es[graph.incident(node)]:
        neighbour = edge.target if edge.source == node else edge.source
        if neighbour >= view.passages:
            weights[neighbour] = weights.get(neighbour, 0.0) + edge["weight"]
    strength = dict(zip(weights, graph.strength(list(weights), weights="weight")))
    flows = {n: ranks[n] * w / strength[n] for n, w in weights.items() if strength[n] > 0}
    best = sorted(flows, key=lambda n: -flows[n])[:CARRIERS]
    return tuple(view.names[n] for n in best)
