"""Personalized PageRank's rules (retrieval/pagerank.py) on small hand-made graphs."""

from __future__ import annotations

import igraph
import numpy as np
from pyoxigraph import NamedNode, Triple

from sparqlrag.retrieval.pagerank import LINKED_ENTITIES, FactSeed, entity_seeds, linked_facts, rank
from sparqlrag.store.graph_index import GraphView

P = [f"http://x/chunk/{i}" for i in range(6)]
E = [f"http://x/id/{name}" for name in ("curie", "warsaw", "poland", "bread")]
RELATION = NamedNode("http://x/rel/born-in")


def view(edges: list[tuple[str, str, float]]) -> GraphView:
    names = P + E
    vertex = {name: i for i, name in enumerate(names)}
    graph = igraph.Graph(
        n=len(names),
        edges=[(vertex[a], vertex[b]) for a, b, _ in edges],
        directed=False,
        edge_attrs={"weight": [w for _, _, w in edges]},
    )
    counts = np.zeros(len(names), dtype=np.int64)
    for a, b, _ in edges:
        for end, other in ((a, b), (b, a)):
            if end in E and other in P:
                counts[vertex[end]] += 1
    return GraphView(graph, names, vertex, len(P), counts)


def fact(subject: str, obj: str) -> Triple:
    return Triple(NamedNode(subject), RELATION, NamedNode(obj))


# P[0] names Curie and Warsaw; P[5] names Warsaw and Poland; P[3] names bread
GRAPH = view([(P[0], E[0], 1), (P[0], E[1], 1), (P[5], E[1], 1), (P[5], E[2], 1), (P[3], E[3], 1), (E[0], E[1], 2)])
HYBRID = [(P[i], 1.0 / (60 + rank)) for rank, i in enumerate([1, 0, 2, 3, 4, 5], start=1)]


def test_with_no_seed_the_ranking_is_the_hybrid_ranking_itself() -> None:
    ranking = rank(GRAPH, [], HYBRID)
    assert ranking.order == [chunk for chunk, _ in HYBRID] and ranking.scores == dict(HYBRID)
    assert rank(view([]), entity_seeds(view([]), [FactSeed(fact(E[0], E[1]), "s", 0.9, "")]), HYBRID).order == [
        chunk for chunk, _ in HYBRID
    ]  # no edge: nothing to rank from


def test_a_seed_lifts_the_passages_its_entities_reach_past_the_hybrid_order() -> None:
    seeds = entity_seeds(GRAPH, [FactSeed(fact(E[0], E[1]), "s", 0.9, "")])
    assert {s.entity for s in seeds} == {E[0], E[1]}
    # Curie is in one passage, Warsaw in two: a fact's score is shared among an entity's passages
    weights = {s.entity: s.weight for s in seeds}
    assert weights[E[0]] == 1.0 and weights[E[1]] == 0.5
    ranking = rank(GRAPH, seeds, HYBRID, explain=2)
    assert ranking.order[:2] == [P[0], P[5]]  # P[5] was last in the hybrid ranking
    assert ranking.scores[P[3]] < ranking.scores[P[5]]  # bread: nothing the seeds reach
    assert ranking.carriers[P[0]][0] in (E[0], E[1]) and set(ranking.carriers[P[5]]) <= {E[1], E[2]}


def test_only_the_heaviest_linked_entities_seed() -> None:
    facts = [FactSeed(fact(f"http://x/id/e{i}", f"http://x/id/e{i + 1}"), f"s{i}", 0.9 - i / 100, "") for i in range(7)]
    names = P + [f"http://x/id/e{i}" for i in range(8)]
    vertex = {name: i for i, name in enumerate(names)}
    graph = igraph.Graph(n=len(names), edges=[(0, vertex[f"http://x/id/e{i}"]) for i in range(8)], directed=False)
    many = GraphView(graph, names, vertex, len(P), np.array([0] * len(P) + [1] * 8))
    seeds = entity_seeds(many, facts)
    assert len(seeds) == LINKED_ENTITIES and seeds[0].entity == "http://x/id/e0"
    assert [s.weight for s in seeds] == sorted((s.weight for s in seeds), reverse=True)
    assert entity_seeds(many, [FactSeed(fact("http://x/id/e0", "http://x/id/e1"), "s", -0.2, "")]) == []


def test_offline_recognition_keeps_the_near_facts_that_name_a_linked_entity() -> None:
    near = [
        FactSeed(fact(E[0], E[1]), "s0", 0.6, "Curie born in Warsaw"),
        FactSeed(fact(E[3], E[2]), "s1", 0.7, "bread from Poland"),
    ]
    assert linked_facts(near, {E[1]}) == near[:1]
    assert linked_facts(near, set()) == []  # a question that names nothing: PageRank gets no entity
    assert entity_seeds(GRAPH, linked_facts(near, set())) == [] and rank(GRAPH, [], HYBRID).order[0] == P[1]
