"""Entities by name, as a question's grounding finds them (graph_rag's `_ground`): the name is
embedded and the collection's entity index searched, where each entity is indexed by its label,
its definition and each alias; a hit on an alias's IRI stands for the entity it names."""

from __future__ import annotations

from dataclasses import dataclass

from pyoxigraph import NamedNode

from sparqlrag.models.embedder import Embedder
from sparqlrag.store.aliases import canonicals
from sparqlrag.store.base import QuadStore
from sparqlrag.store.facts import node_labels
from sparqlrag.store.select import select
from sparqlrag.store.sparql_text import sparql_term, values
from sparqlrag.store.vector_index import VectorIndex
from sparqlrag.store.vocab import Iris

FETCHED = 3  # hits asked per entity wanted: an entity is indexed under several names


@dataclass(frozen=True)
class EntityMatch:
    entity: str
    label: str
    name: str  # the name that matched: the label, or an alias
    score: float  # the cosine of the name and the search


def find_entities(
    embedder: Embedder, vectors: VectorIndex, store: QuadStore, iris: Iris, text: str, limit: int
) -> list[EntityMatch]:
    """The `limit` entities nearest `text`, best first; each once, at its best name's score."""
    hits = vectors.search(iris.collection, "entities", embedder.embed([text])[0], limit * FETCHED)
    aliases = canonicals(store, iris, [hit.iri for hit in hits])
    best: dict[str, tuple[float, str]] = {}
    for hit in hits:
        entity = aliases.get(hit.iri, hit.iri)
        if entity not in best:
            best[entity] = (hit.score, str(hit.payload.get("alias") or hit.payload.get("label") or ""))
    present = _present(store, iris, list(best))  # (an index may hold an entity its last document took away)
    chosen = [entity for entity in best if entity in present][:limit]
    labels = node_labels(store, iris, chosen)
    return [EntityMatch(e, labels[e], best[e][1] or labels[e], best[e][0]) for e in chosen]


def _present(store: QuadStore, iris: Iris, entities: list[str]) -> set[str]:
    if not entities:
        return set()
    rows = select(
        store,
        f"SELECT DISTINCT ?e WHERE {{ {values('e', map(NamedNode, entities))} "
        f"GRAPH {sparql_term(iris.knowledge_graph)} {{ ?e ?p ?o }} }}",
    )
    return {row["e"] for row in rows}
