"""The graph explorer's use cases (the `/explore` page and any other tool): an entity's
neighbourhood, bounded; entities by name; one fact with the chunks it was extracted from."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pydantic import Field
from pyoxigraph import NamedNode, Triple

from sparqlrag.operations.collection import Collection
from sparqlrag.operations.deadline import Deadline
from sparqlrag.operations.failures import Refused
from sparqlrag.operations.requests import EntitySearch, FactQuery, GraphQuery
from sparqlrag.queries.describe import fact_evidence
from sparqlrag.queries.entity_search import EntityMatch, find_entities
from sparqlrag.queries.neighbourhood import Filters, Neighbourhood, known, neighbourhood, stated
from sparqlrag.retrieval.views import NamedFact, PassageView, View
from sparqlrag.store.aliases import canonicals
from sparqlrag.store.facts import fact_text, node_labels
from sparqlrag.threads import off_loop

__all__ = ["EntityMatch", "Neighbourhood"]


class Testimony(View):
    """A chunk a fact was extracted from: the passage (its page and original file) and the sentence."""

    sentence: str | None = Field(description="the evidence sentence, where the extractor kept one")
    reifier: str = Field(description="the reifier that links the fact to the chunk")
    passage: PassageView


class FactEvidence(View):
    """A fact of the knowledge graph, named, with every chunk of a ready document that states it."""

    fact: NamedFact
    labels: list[str] = Field(description="the names of its subject, predicate and object")
    evidence: list[Testimony]


@dataclass(frozen=True)
class EntityMatches:
    entities: list[EntityMatch]


def _node(value: str, field: str) -> NamedNode:
    try:
        return NamedNode(value)
    except ValueError:
        raise Refused(400, "bad_request", f"{field}: not an IRI") from None


async def graph(collection: Collection, asked: GraphQuery) -> Neighbourhood:
    """The entity's neighbourhood (an alias's IRI: the entity's), within the query deadline;
    404 unknown_entity when no fact of the collection names it."""
    services, iris = collection.services, collection.iris
    deadline = Deadline(services.settings.query_timeout, "while the graph was drawn")
    asked_for = _node(asked.entity, "entity").value
    entity = (await off_loop(canonicals, services.store, iris, [asked_for])).get(asked_for, asked_for)
    if not await off_loop(known, services.store, iris, entity, deadline.left):
        raise Refused(404, "unknown_entity", f"collection {collection.name!r} has no entity <{asked_for}>")
    filters = Filters(
        _node(asked.relation, "relation") if asked.relation else None,
        iris.document(asked.document) if asked.document else None,
    )
    return await off_loop(neighbourhood, services.store, iris, entity, asked.depth, asked.limit, filters, deadline.left)


async def entities(collection: Collection, asked: EntitySearch) -> EntityMatches:
    """The entities whose names are nearest the search, best first."""
    services = collection.services
    found = await off_loop(
        find_entities,
        services.embedder,
        services.vectors,
        services.store,
        collection.iris,
        asked.search.strip(),
        asked.limit,
    )
    return EntityMatches(found)


async def fact(collection: Collection, asked: FactQuery) -> FactEvidence:
    """The fact with its evidence; 404 unknown_fact when the knowledge graph does not hold it."""
    services, iris = collection.services, collection.iris
    triple = Triple(_node(asked.subject, "subject"), _node(asked.predicate, "predicate"), _node(asked.object, "object"))
    if not await off_loop(stated, services.store, iris, triple):
        raise Refused(404, "unknown_fact", f"collection {collection.name!r} does not state that fact")
    evidence, labels = await asyncio.gather(
        off_loop(fact_evidence, services.store, iris, triple),
        off_loop(node_labels, services.store, iris, [t.value for t in triple]),
    )
    names = [labels[t.value] for t in triple]
    return FactEvidence(
        fact=NamedFact.named(triple, fact_text(triple, labels)),
        labels=names,
        evidence=[
            Testimony(sentence=e.sentence, reifier=e.reifier, passage=PassageView.of(e.passage)) for e in evidence
        ],
    )
