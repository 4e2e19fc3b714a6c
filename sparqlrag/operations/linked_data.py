"""What the server's own IRIs stand for: an entity (`id/...`), a relation minted from text
(`rel/...`), a document or chunk (`doc/...`), a fact's reifier (`stmt/...`) and a trace
(`trace/...`), each described from the store (queries/describe.py, queries/records.py); and a
document's original file. `path` is an IRI without the base IRI; `reads` the collections the
caller may read (None: all), which is what a relation's facts are shown from.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparqlrag.extraction.decoders import MEDIA_TYPES
from sparqlrag.library.files import Upload
from sparqlrag.library.librarian import DocumentInfo
from sparqlrag.operations.collection import Collection
from sparqlrag.operations.failures import Refused
from sparqlrag.queries.describe import (
    Description,
    Statement,
    canonical,
    collection_of_iri,
    describe,
    describe_relation,
    describe_source,
    document_of,
    exists,
)
from sparqlrag.queries.records import describe_statement, describe_trace
from sparqlrag.services import Services
from sparqlrag.threads import off_loop

__all__ = ["MEDIA_TYPES", "Description", "DocumentInfo", "Statement", "Upload"]

DESCRIBERS: dict[str, Callable[..., Any]] = {
    "id": describe,
    "rel": describe_relation,
    "doc": describe_source,
    "stmt": describe_statement,
    "trace": describe_trace,
}
PAGED = ("id", "rel", "doc")  # the kinds with a page (and cheaper to find than to describe)
OF_A_COLLECTION = ("id", "doc", "stmt", "trace")  # kinds whose IRIs name their collection first

Reads = frozenset[str] | None


def kind_of(path: str) -> str:
    return path.split("/", 1)[0]


def _missing(services: Services, path: str) -> Refused:
    return Refused(404, "not_found", f"no knowledge names <{services.settings.base_iri + path}>")


async def description(services: Services, path: str, reads: Reads) -> Any:
    """What the IRI `path` is described as; 404 when unknown or not one of the kinds."""
    describer = DESCRIBERS.get(kind_of(path))
    if describer is None:
        raise _missing(services, path)
    if describer is describe_relation:
        describer = functools.partial(describe_relation, collections=reads)
    base = services.settings.base_iri
    found = await off_loop(describer, services.store, base, base + path)
    if found is None:
        raise _missing(services, path)
    return found


async def check_known(services: Services, path: str, reads: Reads) -> None:
    """404 unless the store knows the IRI `path` (a document's counts: document_info)."""
    kind, base = kind_of(path), services.settings.base_iri
    if kind not in DESCRIBERS:
        raise _missing(services, path)
    if kind in PAGED:
        known = await off_loop(exists, services.store, base, base + path, kind, reads)
    else:
        known = await off_loop(DESCRIBERS[kind], services.store, base, base + path) is not None
    if not known:
        raise _missing(services, path)


async def canonical_path(services: Services, path: str) -> str:
    """The path of the entity an alias's IRI stands for; the path itself for anything else."""
    base = services.settings.base_iri
    if kind_of(path) == "id" and (alias_of := await off_loop(canonical, services.store, base, base + path)):
        return alias_of.removeprefix(base)
    return path


async def document_info(services: Services, path: str) -> DocumentInfo | None:
    """The document the IRI `doc/C/ID` names; None for a chunk, or an IRI no document has."""
    base = services.settings.base_iri
    return await off_loop(document_of, services.store, base, base + path) if kind_of(path) == "doc" else None


async def original(services: Services, path: str) -> tuple[DocumentInfo, Upload, Path]:
    """The document `doc/C/ID`, how it was uploaded and where the library keeps its bytes; 404
    when there is no such document, or the library keeps no file of it."""
    info = await document_info(services, path)
    if info is None:
        raise Refused(404, "document_not_found", f"no document <{services.settings.base_iri + path}>")
    try:
        upload, file = await off_loop(services.library.original, path.split("/")[1], info.id)
    except LookupError:
        raise Refused(
            404, "no_original", "the library keeps no file of this document (it came in a knowledge core)"
        ) from None
    return info, upload, file


async def entity(collection: Collection, named: str) -> Description:
    """What the graph says about an entity, named by its IRI or by its name in the collection."""
    base = collection.iris.base
    iri = named if named.startswith(base + "id/") else collection.iris.entity(named).value
    found = await off_loop(describe, collection.services.store, base, iri)
    if found is None:
        raise Refused(404, "not_found", f"collection {collection.name!r} has no entity {named[:200]!r}")
    return found


def entity_collection(services: Services, named: str, otherwise: str) -> str:
    """The collection an entity IRI names, else `otherwise` (a name is looked up there)."""
    return collection_of_iri(services.settings.base_iri, named) or otherwise
