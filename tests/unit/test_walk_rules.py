"""The Graph RAG walk rules that need no graph: clauses, hub damping, path text, kept sets."""

from __future__ import annotations

import pytest
from pyoxigraph import NamedNode, Triple

from sparqlrag.retrieval.graph_rag import HUB_DAMPING, GraphRag
from sparqlrag.retrieval.question import clauses
from sparqlrag.retrieval.walk import Edge
from sparqlrag.store.vocab import SR_COOCCURS


def test_a_question_that_asks_several_things_has_clauses() -> None:
    assert clauses("Where did the inventor of the Web invent it, and where is that?") == [
        "Where did the inventor of the Web invent it",
        "where is that?",
    ]
    assert clauses("Are Tom and Jerry from the same country?") == [] and clauses("Who directed Kismet?") == []
    assert clauses("When was it built; who built it?") == ["When was it built", "who built it?"]


def test_a_hub_reached_through_an_edge_is_damped_and_a_seed_is_not() -> None:
    """A node whose edges in one direction fill triple_limit is a hub: what was fetched from it
    is a sample, so a path through it weighs less. A seed is what the question names: never damped."""
    seed, hub, rare = (NamedNode(f"http://kb.example/entity/{name}") for name in ("seed", "hub", "rare"))
    p = NamedNode("http://kb.example/predicate/p")
    films = [NamedNode(f"http://kb.example/entity/film-{i}") for i in range(3)]
    found = [(Triple(film, p, node), node.value) for node in (hub, seed) for film in films] + [
        (Triple(films[0], p, rare), rare.value)
    ]
    via = {
        node.value: Edge(Triple(seed, p, node), ("seed", "p", node.value)) for node in (hub, rare)
    }  # reached through an edge
    weights = GraphRag._weights({seed.value: 0.9, hub.value: 0.8, rare.value: 0.7}, via, found, limit=3)
    assert weights == {seed.value: 0.9, hub.value: pytest.approx(0.8 * HUB_DAMPING), rare.value: 0.7}
    assert GraphRag._weights({hub.value: 0.8}, via, found, limit=4) == {hub.value: 0.8}  # under the limit: no hub


def test_a_path_through_a_co_occurrence_is_judged_by_its_last_fact() -> None:
    """A co-occurrence says two names appear together, not how they relate: it leads to an edge
    without being part of its path's text; a real relation is."""
    a, b, c = (NamedNode(f"http://kb.example/entity/{name}") for name in "abc")
    related = NamedNode("http://kb.example/predicate/works-with")
    edge = Edge(Triple(b, related, c), ("B", "works with", "C"))
    edge.via = Edge(Triple(a, SR_COOCCURS, b), ("A", "co-occurs with", "B"))
    assert edge.leading is None and edge.path_text == "B works with C"
    edge.via = Edge(Triple(a, related, b), ("A", "works with", "B"))
    assert edge.leading is edge.via and edge.path_text == "A works with B. B works with C"
