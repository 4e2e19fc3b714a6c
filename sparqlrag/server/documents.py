"""`/api/v1/documents` (upload, list, status, re-ingest, delete) and `/api/v1/document-rag`.

Uploads are multipart (one file a part), JSON (`{"id", "text", "title", "media_type"}`), or a
raw body with its Content-Type and `?id=`. The request returns when the document is ingested
(201, or 200 when its content was unchanged), or at once with 202 when the client sends
`Prefer: respond-async` (or `?async=true`): `GET /api/v1/documents/{id}` then shows the status
and progress. A document that cannot be read is refused with nothing written, either way.
`POST /api/v1/documents/{id}/reingest` extracts a document again from the bytes the library kept.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any
from urllib.parse import quote

from pydantic import ValidationError
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag.extraction.decoders import DecodeError
from sparqlrag.extraction.pipeline import Pipeline
from sparqlrag.extraction.plans import IngestResult, Source
from sparqlrag.library import librarian
from sparqlrag.operations import answers
from sparqlrag.operations.failures import Refused, described
from sparqlrag.operations.requests import DocumentRagRequest, TextDocument, refusal
from sparqlrag.server.auth import authorize, client_key
from sparqlrag.server.bodies import read_body
from sparqlrag.server.collections import collection_of, opened
from sparqlrag.server.contracts import parsed
from sparqlrag.server.hang_ups import decoding_for
from sparqlrag.server.rate_limit import limit_answers
from sparqlrag.server.state import state_of
from sparqlrag.server.streams import sse, wants_stream
from sparqlrag.services import Services
from sparqlrag.store.calls import off_loop
from sparqlrag.store.formats import media_type_of
from sparqlrag.store.vocab import Iris, original_file


def _services(request: Request) -> Services:
    return state_of(request).services


def _in_background(request: Request) -> bool:
    """RFC 7240 `Prefer: respond-async`, or `?async=true`."""
    prefer = request.headers.get("prefer", "").lower()
    return "respond-async" in prefer or request.query_params.get("async", "").lower() in ("true", "1", "yes")


async def _sources(request: Request) -> list[Source]:
    settings = state_of(request).settings
    content_type = request.headers.get("content-type", "")
    kind = media_type_of(content_type)
    if kind == "multipart/form-data":
        declared = request.headers.get("content-length", "")
        if not declared.isdigit():
            raise Refused(411, "length_required", "multipart uploads need a Content-Length header")
        if int(declared) > settings.max_upload_bytes:
            raise Refused(
                413, "body_too_large", f"the request body is larger than the {settings.max_upload_bytes} byte limit"
            )
        async with request.form(max_files=1000) as form:
            files = [(name, value) for name, value in form.multi_items() if isinstance(value, UploadFile)]
            sources = [
                Source(value.filename or name, await value.read(), value.content_type, value.filename, None)
                for name, value in files
            ]
        if not sources:
            raise Refused(400, "bad_request", "the multipart body has no file parts")
        return sources
    body = await read_body(request, settings.max_upload_bytes)
    if kind == "application/json":
        try:
            item = TextDocument.model_validate_json(body)
        except ValidationError as error:
            raise refusal(error, TextDocument) from None
        return [Source(item.id, item.text.encode("utf-8"), item.media_type, None, item.title)]
    document_id = request.query_params.get("id")
    if not document_id:
        raise Refused(400, "bad_request", "a raw upload needs ?id= to name the document (or send multipart/form-data)")
    return [Source(document_id, body, kind or None, None, request.query_params.get("title"))]


def _status_url(collection: str, document_id: str) -> str:
    return f"/api/v1/documents/{quote(document_id, safe='')}?collection={collection}"


def _result(collection: str, result: IngestResult | Exception, source: Source) -> dict[str, Any]:
    href = _status_url(collection, source.document_id)
    if isinstance(result, Exception):
        _, code, detail = described(result)
        return {"id": source.document_id, "status": "failed", "error": detail, "code": code, "href": href}
    return {"id": source.document_id, **asdict(result), "href": href}


async def upload(request: Request) -> Response:
    authorize(request, "write", per_collection=True)
    collection = await collection_of(request)
    async with state_of(request).uploads.admitted(client_key(request)):  # (before the body is read)
        return await _ingest(request, collection, await _sources(request), force=False)


async def reingest(request: Request) -> Response:
    """Extract a document again (e.g. after changing the extractor or its prompts)."""
    authorize(request, "write", per_collection=True)
    collection, document_id = await collection_of(request), request.path_params["id"]
    async with state_of(request).uploads.admitted(client_key(request)):
        try:
            source = await _services(request).pipeline.kept_source(collection, document_id)
        except LookupError as error:
            raise Refused(404, "document_not_found", f"{error} (upload it again to keep a copy)") from None
        return await _ingest(request, collection, [source], force=True)


async def _ingest(request: Request, collection: str, sources: list[Source], *, force: bool) -> Response:
    pipeline = _services(request).pipeline
    try:
        async with decoding_for(request, client_key(request)):
            return await _ingested(request, pipeline, collection, sources, force=force)
    except DecodeError as error:
        raise Refused(*described(error)) from None
    except ValueError as error:  # the same document named twice in one upload
        raise Refused(400, "bad_request", str(error)) from None


async def _ingested(
    request: Request, pipeline: Pipeline, collection: str, sources: list[Source], *, force: bool
) -> Response:
    if _in_background(request):
        accepted = await pipeline.submit(collection, sources, force=force)
        items = [_result(collection, r, s) for r, s in zip(accepted, sources)]
        headers = {"Location": items[0]["href"]} if len(items) == 1 else None
        return JSONResponse({"documents": items}, status_code=202, headers=headers)
    results = await pipeline.ingest_many(collection, sources, force=force)
    items = [_result(collection, r, s) for r, s in zip(results, sources)]
    failures = [r for r in results if isinstance(r, Exception)]
    if failures and len(failures) == len(results):
        status, code, detail = described(failures[0])
        raise Refused(status, code, detail if len(items) == 1 else f"no document could be ingested: {detail}")
    changed = any(not isinstance(r, Exception) and r.status == "ready" for r in results)
    return JSONResponse({"documents": items}, status_code=201 if changed else 200)


def _info(info: librarian.DocumentInfo) -> dict[str, Any]:
    """A document as the API lists it, with where its original file is (server/originals.py)."""
    return asdict(info) | {"file": original_file(info.iri)}


async def list_documents(request: Request) -> Response:
    authorize(request, "read", per_collection=True)
    services = _services(request)
    iris = Iris(services.settings.base_iri, await collection_of(request))
    rows = await off_loop(librarian.documents, services.store, iris)
    return JSONResponse({"documents": [_info(row) for row in rows]})


async def get_document(request: Request) -> Response:
    authorize(request, "read", per_collection=True)
    services = _services(request)
    iris = Iris(services.settings.base_iri, await collection_of(request))
    rows = await off_loop(librarian.documents, services.store, iris, iris.document(request.path_params["id"]))
    if not rows:
        raise Refused(404, "document_not_found", f"no document {request.path_params['id']!r} in this collection")
    return JSONResponse(_info(rows[0]))


async def delete_document(request: Request) -> Response:
    authorize(request, "write", per_collection=True)
    document_id = request.path_params["id"]
    if not await _services(request).pipeline.forget(await collection_of(request), document_id):
        raise Refused(404, "document_not_found", f"no document {document_id!r} in this collection")
    return Response(status_code=204)


async def document_rag(request: Request) -> Response:
    """A DocumentRagRequest (server/contracts.py)."""
    authorize(request, "read", per_collection=True)
    limit_answers(request)
    asked = await parsed(request, DocumentRagRequest)
    collection = await opened(request, asked.collection)
    if wants_stream(asked.stream, request.headers.get("accept", "")):
        return sse(answers.stream_documents(collection, asked))
    return JSONResponse((await answers.ask_documents(collection, asked)).as_json())
