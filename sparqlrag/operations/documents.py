"""Documents in and out of a collection: ingest (now, or accepted to ingest in the background),
ingest again from the library's copy, list, show and forget; what an ingest reports per document.

Every surface reads its documents its own way (a multipart upload, a folder, an MCP call) into
`Source`s and hands them here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path, PurePath
from typing import Any

from sparqlrag.extraction.decode_pool import CALLER, DecodeCaller
from sparqlrag.extraction.decoders import EXTENSIONS, MEDIA_TYPES, PDF, TEXT, DecodeError, kinds
from sparqlrag.extraction.knowledge import Extractor
from sparqlrag.extraction.pipeline import Progress
from sparqlrag.extraction.plans import IngestResult, Source
from sparqlrag.extraction.triples_import import PreExtracted, TriplesFormatError, read_triples
from sparqlrag.library import librarian
from sparqlrag.library.librarian import DocumentInfo
from sparqlrag.operations.collection import Collection
from sparqlrag.operations.failures import Refused, described
from sparqlrag.services import Services
from sparqlrag.store.formats import RDF_EXTENSIONS
from sparqlrag.store.vocab import original_file
from sparqlrag.threads import off_loop

__all__ = [
    "EXTENSIONS",
    "MEDIA_TYPES",
    "PDF",
    "TEXT",
    "kinds",
    "DocumentInfo",
    "Extractor",
    "IngestResult",
    "Progress",
    "Source",
]

Ingested = IngestResult | Exception
"""One document's outcome: its result, or what it failed with (the others go on)."""


def rdf_refusal(filename: str) -> str | None:
    """Why a file named so is not a document: it is RDF, which goes into the store as it is
    (`load`, or POST /store; an ontology with `ontology load`), not through text extraction."""
    if PurePath(filename).suffix.lower().lstrip(".") not in RDF_EXTENSIONS - {"xml"}:  # (.xml: often not RDF)
        return None
    return (
        f"{PurePath(filename).name} is RDF, not a document: load it into the store as it is "
        "(`sparqlrag load FILE`, or POST /store), or as an ontology (`sparqlrag ontology load NAME FILE`)"
    )


def check_sources(sources: list[Source]) -> None:
    """Refused (400) for a source that is RDF, before anything is read or written."""
    for source in sources:
        if source.filename and (why := rdf_refusal(source.filename)):
            raise Refused(400, "bad_document", why)


async def ingest(
    collection: Collection, sources: list[Source], *, force: bool = False, on_progress: Progress | None = None
) -> list[Ingested]:
    """Each document ingested now (or found unchanged); `force` extracts every chunk again."""
    check_sources(sources)
    with _named_once():
        return await collection.services.pipeline.ingest_many(
            collection.iris, sources, on_progress=on_progress, force=force
        )


async def submit(collection: Collection, sources: list[Source], *, force: bool = False) -> list[IngestResult]:
    """Each document decoded and accepted now (`queued`, or `unchanged`), ingested in the background."""
    check_sources(sources)
    with _named_once():
        return await collection.services.pipeline.submit(collection.iris, sources, force=force)


@contextlib.contextmanager
def _named_once() -> Iterator[None]:
    """The pipeline's ValueError for a document named twice in one call, as a 400 (a DecodeError,
    a ValueError too, says what is wrong with a document: failures.py maps it)."""
    try:
        yield
    except DecodeError:
        raise
    except ValueError as error:
        raise Refused(400, "bad_request", str(error)) from None


async def recover(services: Services) -> list[Ingested]:
    """The ingests a stopped process left, finished."""
    return await services.recovery.recover()


async def kept_source(collection: Collection, document_id: str) -> Source:
    """The document as the library kept it, to ingest again; 404 when it keeps none."""
    try:
        return await collection.services.pipeline.kept_source(collection.iris, document_id)
    except LookupError as error:
        raise Refused(404, "document_not_found", f"{error} (upload it again to keep a copy)") from None


async def documents(collection: Collection) -> list[DocumentInfo]:
    return await off_loop(librarian.documents, collection.services.store, collection.iris)


async def document(collection: Collection, document_id: str) -> DocumentInfo:
    """One document's status and counts; 404 for an id the collection does not have."""
    rows = await off_loop(
        librarian.documents, collection.services.store, collection.iris, collection.iris.document(document_id)
    )
    if not rows:
        raise _missing(collection, document_id)
    return rows[0]


async def forget(collection: Collection, document_id: str) -> None:
    """The document, its chunks and the facts only it supported, deleted; 404 for an unknown id."""
    if not await collection.services.pipeline.forget(collection.iris, document_id):
        raise _missing(collection, document_id)


def _missing(collection: Collection, document_id: str) -> Refused:
    return Refused(404, "document_not_found", f"no document {document_id!r} in collection {collection.name!r}")


def document_json(info: DocumentInfo) -> dict[str, Any]:
    """A document as it is listed, with where its original file is (server/originals.py)."""
    return asdict(info) | {"file": original_file(info.iri)}


def outcome_json(result: Ingested, document_id: str) -> dict[str, Any]:
    """One document's outcome as JSON: its counts, or `failed` with the code and message."""
    if isinstance(result, Exception):
        _, code, detail = described(result)
        return {"id": document_id, "status": "failed", "error": detail, "code": code}
    return {"id": document_id, **asdict(result)}


def pre_extracted(path: Path) -> Extractor:
    """The triples of a JSONL file (passage_id, entities, triples) as the extractor of an ingest,
    each checked before anything is ingested: 400 naming the file and line otherwise."""
    if not path.is_file():
        raise Refused(400, "bad_triples", f"no such file: {path}")
    try:
        return PreExtracted(read_triples(path))
    except TriplesFormatError as error:
        raise Refused(400, "bad_triples", f"{path}: {error}") from None


@contextlib.contextmanager
def decoding_for(client: bytes) -> Iterator[asyncio.Event]:
    """Documents decoded in the block are `client`'s: the decode pool shares its processes fairly
    between clients, and stops a client's decodes once the event it yields is set (it hung up)."""
    caller = DecodeCaller(client)
    token = CALLER.set(caller)
    try:
        yield caller.gone
    finally:
        CALLER.reset(token)
