"""Collections: create, list with counts, show, delete with everything they hold, and move one
between servers as a knowledge core (library/cores.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparqlrag.library.cores import MEDIA_TYPE, ImportResult
from sparqlrag.library.librarian import CollectionInfo, UnknownCollection
from sparqlrag.ontology.registry import UnknownOntology
from sparqlrag.operations.access import Access
from sparqlrag.operations.failures import Refused
from sparqlrag.operations.requests import NewCollection
from sparqlrag.services import Services
from sparqlrag.store.vocab import DEFAULT_COLLECTION

__all__ = ["DEFAULT_COLLECTION", "MEDIA_TYPE", "CollectionInfo", "ImportResult"]

EMPTIED = "the default collection always exists: it was emptied, and stays"


async def create(services: Services, asked: NewCollection, access: Access) -> CollectionInfo:
    """A new collection (extracting with a loaded ontology, if one is named): 403 beyond the
    caller's grants, 400 for an ontology not loaded, 409 when it exists."""
    access.check("write", asked.name)
    if asked.ontology is not None:
        try:
            await services.ontologies.info(asked.ontology)
        except UnknownOntology as error:
            raise Refused(400, "unknown_ontology", f"{error}: load it first (POST /api/v1/ontologies)") from None
    if not await services.collections.create(asked.name, asked.ontology):
        raise Refused(409, "collection_exists", f"collection {asked.name!r} exists already")
    return await info(services, asked.name)


async def listed(services: Services, access: Access) -> list[CollectionInfo]:
    """The collections the caller may read, with their counts."""
    return [found for found in await services.collections.list() if access.may("read", found.name)]


async def info(services: Services, name: str) -> CollectionInfo:
    found = await services.collections.get(name)
    if found is None:
        raise UnknownCollection(name)
    return found


async def delete(services: Services, name: str) -> str:
    """Everything of the collection deleted: graphs, vectors, keyword rows, kept documents. What
    was done, in words: `default` always exists, so it is emptied and stays."""
    if not await services.collections.delete(name):
        raise UnknownCollection(name)
    return EMPTIED if name == DEFAULT_COLLECTION else f"deleted {name}"


async def export_core(services: Services, name: str, target: Path) -> dict[str, Any]:
    """The collection written to `target` as a knowledge core; its manifest."""
    return await services.cores.export(name, target)


async def import_core(services: Services, core: Path, into: str | None) -> ImportResult:
    """A knowledge core imported (into `into`, else the collection it was exported from)."""
    return await services.cores.import_(core, into)
