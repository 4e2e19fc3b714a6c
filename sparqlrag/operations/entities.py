"""A collection's entities: a person's corrections to entity resolution (merge two, split an
alias off) and an entity's aliases with their evidence; indexing a loaded graph's entities and
facts for Graph RAG, and rebuilding the derived indexes from the store.
"""

from __future__ import annotations

from sparqlrag.extraction.curation import EntityAliases
from sparqlrag.extraction.pipeline import Progress
from sparqlrag.operations.collection import Collection
from sparqlrag.operations.requests import AliasesQuery, EntityMerge, EntitySplit
from sparqlrag.services import Services

__all__ = ["EntityAliases"]


async def aliases(collection: Collection, asked: AliasesQuery) -> EntityAliases:
    """The entity's aliases, the merges that joined them, the names kept apart (404 unknown_entity)."""
    return await collection.services.curation.aliases(collection.iris, asked.entity.strip())


async def merge(collection: Collection, asked: EntityMerge) -> EntityAliases:
    """`other` is `entity`; the entity's aliases after (409 curation_refused when the graph says otherwise)."""
    return await collection.services.curation.merge(collection.iris, asked.entity.strip(), asked.other.strip())


async def split(collection: Collection, asked: EntitySplit) -> EntityAliases:
    """`alias` names something else than `entity`; the entity's aliases after."""
    return await collection.services.curation.split(collection.iris, asked.entity.strip(), asked.alias.strip())


async def index_graph(collection: Collection, on_progress: Progress | None = None) -> tuple[int, int]:
    """The labelled entities and the facts of triples loaded into the collection's graph made
    groundable and scorable: (entity vectors, fact vectors) written."""
    return await collection.services.indexer.index_graph(collection.iris, on_progress=on_progress)


async def reindex(services: Services, name: str, on_progress: Progress | None = None) -> int:
    """A collection's vector and keyword indexes rebuilt from the store (the system of record)."""
    return await services.indexer.reindex(services.collections.iris(name), on_progress=on_progress)
