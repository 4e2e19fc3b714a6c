"""The Graph RAG walk rules that need no graph: clauses, hub damping, path text, kept sets,
what the reifiers add to the edges."""

from __future__ import annotations

import pytest
from pyoxigraph import Literal, NamedNode, Triple

from sparqlrag.retrieval.hops import HUB_DAMPING, Hops
from sparqlrag.retrieval.question import clauses
from sparqlrag.retrieval.walk import Edge, EdgeSources, edge_sources, evidenced
from sparqlrag.store.select import Term
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
    weights = Hops._weights({seed.value: 0.9, hub.value: 0.8, rare.value: 0.7}, via, found, limit=3)
    assert weights == {seed.value: 0.9, hub.value: pytest.approx(0.8 * HUB_DAMPING), rare.value: 0.7}
    assert Hops._weights({hub.value: 0.8}, via, found, limit=4) == {hub.value: 0.8}  # under the limit: no hub


def test_a_path_through_a_co_occurrence_is_judged_by_its_last_fact() -> None:
    """A co-occurrence says two names appear together, not how they relate: it leads to an edge
    without being part of its path's text; a real relation is."""
    a, b, c = (NamedNode(f"http://kb.example/entity/{name}") for name in "abc")
    related = NamedNode("http://kb.example/predicate/works-with")
    last = Triple(b, related, c), ("B", "works with", "C")
    edge = Edge(*last, via=Edge(Triple(a, SR_COOCCURS, b), ("A", "co-occurs with", "B")))
    assert edge.leading is None and edge.path_text == "B works with C"
    edge = Edge(*last, via=Edge(Triple(a, related, b), ("A", "works with", "B")))
    assert edge.leading is edge.via and edge.path_text == "A works with B. B works with C"


def test_the_sources_of_a_fact_are_its_last_reifier_first_sentence_and_each_chunk_once() -> None:
    a, b, c = (NamedNode(f"http://kb.example/entity/{name}") for name in "abc")
    p = NamedNode("http://kb.example/predicate/p")
    one, other = Triple(a, p, b), Triple(b, p, c)

    def row(fact: Triple, statement: str, chunk: str, sentence: str | None = None) -> dict[str, Term]:
        found: dict[str, Term] = {"s": fact.subject, "p": fact.predicate, "o": fact.object, "st": NamedNode(statement)}
        return found | {"chunk": NamedNode(chunk)} | ({"sentence": Literal(sentence)} if sentence else {})

    rows = [
        row(one, "urn:st1", "urn:c1"),
        row(one, "urn:st2", "urn:c2", "A p B."),
        row(one, "urn:st3", "urn:c1", "Later."),
        row(Triple(c, p, a), "urn:st4", "urn:c3"),  # not asked for
    ]
    found = edge_sources(rows, {one, other})
    assert found == {one: EdgeSources("urn:st3", "A p B.", ("urn:c1", "urn:c2"))}


def test_sources_and_reasoning_reach_one_edge_per_fact_and_the_paths_through_it() -> None:
    a, b, c = (NamedNode(f"http://kb.example/entity/{name}") for name in "abc")
    p = NamedNode("http://kb.example/predicate/p")
    first = Edge(Triple(a, p, b), ("A", "p", "B"), score=0.9, hop=1)
    weaker = Edge(Triple(a, p, b), ("A", "p", "B"), score=0.2, hop=2)  # the same fact met again
    second = Edge(Triple(b, p, c), ("B", "p", "C"), score=0.8, hop=2, via=first)
    sources = {first.fact: EdgeSources("urn:st", "A p B.", ("urn:c1",))}

    kept, scored = evidenced([first, second], [weaker, first, second], sources, {1: "it says where"})

    assert kept[0].chunks == ("urn:c1",) and kept[0].statement == "urn:st" and kept[0].reasoning is None
    assert kept[1].reasoning == "it says where" and kept[1].chunks == ()
    assert kept[1].via is kept[0] and kept[1].via.sentence_text == "A p B."  # the path leads through the made edge
    assert scored[1] is kept[0] and scored[2] is kept[1] and scored[0] is weaker  # one edge per fact is sourced
    assert first.chunks == () and second.via is first  # the edges given are left as they were
