"""A document's original file, byte for byte, at `/file/doc/{collection}/{id}`.

The document's IRI (`/doc/C/ID`) sends a client that asks for the document's own media type
there (linked_data.resource); answers link a cited page as `/file/doc/C/ID#page=3`. The bytes
are the library's copy of the latest upload. Read scope and the collection's grant are checked
as on every route. What a browser would run is never shown on this origin: only a PDF or plain
text is shown inline; anything else (an uploaded HTML page) is a download, under a sandboxing
Content-Security-Policy, and no type is sniffed.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from sparqlrag.extraction.decoders import PDF, TEXT
from sparqlrag.library import librarian
from sparqlrag.queries.describe import resolved
from sparqlrag.server.auth import authorize, check_collection_access
from sparqlrag.server.errors import ApiError
from sparqlrag.server.state import state_of
from sparqlrag.store.calls import off_loop

INLINE = (PDF, TEXT)


def document_info(request: Request, path: str) -> librarian.DocumentInfo | None:
    """The document `doc/C/ID` names, after the token's grant for C is checked; None when there is none."""
    _, collection, *rest = path.split("/")
    check_collection_access(request, collection)
    if len(rest) != 1:  # a chunk (doc/C/ID/chunk/...) or no document at all
        return None
    base, store = state_of(request).settings.base_iri, state_of(request).store
    found = resolved(store, base, base + path, "doc")
    if found is None:
        return None
    iris, node = found
    rows = librarian.documents(store, iris, node)
    return rows[0] if rows else None


async def original(request: Request) -> Response:
    authorize(request, "read", per_collection=True)
    path = request.scope.get("raw_path", request.url.path.encode()).decode("latin-1").split("?", 1)[0]
    path = path.removeprefix("/file/")
    if not path.startswith("doc/") or path.count("/") != 2:
        raise ApiError(404, "not_found", "original files are at /file/doc/{collection}/{document id}")
    info = await off_loop(document_info, request, path)
    if info is None:
        raise ApiError(404, "document_not_found", f"no document <{state_of(request).settings.base_iri + path}>")
    collection = path.split("/")[1]
    try:
        _, data = await off_loop(state_of(request).services.pipeline.library.load, collection, info.id)
    except LookupError:
        raise ApiError(
            404, "no_original", "the library keeps no file of this document (it came in a knowledge core)"
        ) from None
    inline = info.media_type in INLINE
    filename = quote(info.source.rsplit("/", 1)[-1] or info.id, safe="")
    headers = {
        "Content-Disposition": f"{'inline' if inline else 'attachment'}; filename*=UTF-8''{filename}",
        "X-Content-Type-Options": "nosniff",
    }
    if info.media_type != PDF:  # (a sandboxed PDF is not shown by Chromium's viewer; a PDF runs no page script)
        headers["Content-Security-Policy"] = "sandbox; default-src 'none'"
    media = info.media_type + ("; charset=utf-8" if info.media_type.startswith("text/") else "")
    return Response(data, media_type=media, headers=headers)
