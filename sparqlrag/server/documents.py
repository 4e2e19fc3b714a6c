"""`/api/v1/documents` (upload, list, status, re-ingest, delete) and `/api/v1/document-rag`.

Uploads are multipart (one file a part), JSON (`{"id", "text", "title", "media_type"}`), or a
raw body with its Content-Type and `?id=`. The request returns when the document is ingested
(201, or 200 when its content was unchanged), or at once with 202 when the client sends
`Prefer: respond-async` (or `?async=true`): `GET /api/v1/documents/{id}` then shows the status
and progress. A document that cannot be read is refused with nothing written, either way.
`POST /api/v1/documents/{id}/reingest` extracts a document again from the bytes the library kept.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from pydantic import ValidationError
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag.operations import answers, documents
from sparqlrag.operations.collection import Collection
from sparqlrag.operations.documents import Ingested, Source
from sparqlrag.operations.failures import Refused, described
from sparqlrag.operations.requests import DocumentRagRequest, TextDocument, refusal
from sparqlrag.server.auth import client_key
from sparqlrag.server.bodies import read_body
from sparqlrag.server.collections import opened
from sparqlrag.server.contracts import parsed
from sparqlrag.server.hang_ups import decoding_for
from sparqlrag.server.rate_limit import limit_answers
from sparqlrag.server.state import state_of
from sparqlrag.server.streams import sse, wants_stream
from sparqlrag.store.formats import media_type_of


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


def _status_url(collection: Collection, document_id: str) -> str:
    return f"/api/v1/documents/{quote(document_id, safe='')}?collection={collection.name}"


def _result(collection: Collection, result: Ingested, source: Source) -> dict[str, Any]:
    return documents.outcome_json(result, source.document_id) | {"href": _status_url(collection, source.document_id)}


async def upload(request: Request) -> Response:
    collection = await opened(request)
    async with state_of(request).uploads.admitted(client_key(request)):  # (before the body is read)
        return await _ingest(request, collection, await _sources(request), force=False)


async def reingest(request: Request) -> Response:
    """Extract a document again (e.g. after changing the extractor or its prompts)."""
    collection = await opened(request)
    async with state_of(request).uploads.admitted(client_key(request)):
        source = await documents.kept_source(collection, request.path_params["id"])
        return await _ingest(request, collection, [source], force=True)


async def _ingest(request: Request, collection: Collection, sources: list[Source], *, force: bool) -> Response:
    async with decoding_for(request, client_key(request)):
        if _in_background(request):
            accepted = await documents.submit(collection, sources, force=force)
            items = [_result(collection, r, s) for r, s in zip(accepted, sources)]
            headers = {"Location": items[0]["href"]} if len(items) == 1 else None
            return JSONResponse({"documents": items}, status_code=202, headers=headers)
        results = await documents.ingest(collection, sources, force=force)
    items = [_result(collection, r, s) for r, s in zip(results, sources)]
    failures = [r for r in results if isinstance(r, Exception)]
    if failures and len(failures) == len(results):
        status, code, detail = described(failures[0])
        raise Refused(status, code, detail if len(items) == 1 else f"no document could be ingested: {detail}")
    changed = any(not isinstance(r, Exception) and r.status == "ready" for r in results)
    return JSONResponse({"documents": items}, status_code=201 if changed else 200)


async def list_documents(request: Request) -> Response:
    rows = await documents.documents(await opened(request))
    return JSONResponse({"documents": [documents.document_json(row) for row in rows]})


async def get_document(request: Request) -> Response:
    found = await documents.document(await opened(request), request.path_params["id"])
    return JSONResponse(documents.document_json(found))


async def delete_document(request: Request) -> Response:
    await documents.forget(await opened(request), request.path_params["id"])
    return Response(status_code=204)


async def document_rag(request: Request) -> Response:
    """A DocumentRagRequest (operations/requests.py), answered by operations/answers.py."""
    limit_answers(request)
    asked = await parsed(request, DocumentRagRequest)
    collection = await opened(request, asked.collection)
    if wants_stream(asked.stream, request.headers.get("accept", "")):
        return sse(await answers.stream_documents(collection, asked))
    return JSONResponse((await answers.ask_documents(collection, asked)).as_json())
