"""A document's original file, byte for byte, at `/file/doc/{collection}/{id}`.

The document's IRI (`/doc/C/ID`) sends a client that asks for the document's own media type
there (linked_data.resource); answers link a cited page as `/file/doc/C/ID#page=3`. The bytes
are the library's copy of the latest upload. Read scope and the collection's grant are checked
as on every route. What a browser would run is never shown on this origin: only a PDF or plain
text is shown inline; anything else (an uploaded HTML page) is a download, under a sandboxing
Content-Security-Policy, and no type is sniffed. The media type and file name are those the
library recorded when it read the upload, never what a client may write in the store (a page
relabelled `application/pdf` there would have been shown inline). The file streams from disk.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from sparqlrag.operations import linked_data
from sparqlrag.operations.documents import MEDIA_TYPES, PDF, TEXT
from sparqlrag.operations.failures import Refused
from sparqlrag.server.linked_data import iri_path, reach
from sparqlrag.server.state import state_of
from sparqlrag.threads import off_loop

INLINE = (PDF, TEXT)
PIECE = 64 * 1024


async def original(request: Request) -> Response:
    """The bytes of the document `/file/doc/C/ID` names, as the library kept them."""
    path = iri_path(request, "/file/")
    if not path.startswith("doc/") or path.count("/") != 2:
        raise Refused(404, "not_found", "original files are at /file/doc/{collection}/{document id}")
    reach(request, path)  # the collection's grant
    info, upload, file = await linked_data.original(state_of(request).services, path)
    kind = upload.media_type if upload.media_type in MEDIA_TYPES else "application/octet-stream"
    inline = kind in INLINE
    filename = quote(upload.filename or info.id, safe="")
    headers = {
        "Content-Disposition": f"{'inline' if inline else 'attachment'}; filename*=UTF-8''{filename}",
        "X-Content-Type-Options": "nosniff",
    }
    if kind != PDF:  # (a sandboxed PDF is not shown by Chromium's viewer; a PDF runs no page script)
        headers["Content-Security-Policy"] = "sandbox; default-src 'none'"
    media = kind + ("; charset=utf-8" if kind.startswith("text/") else "")
    try:
        handle, size = await off_loop(_opened, file)  # (open before answering: a file deleted since is a 404)
    except FileNotFoundError:
        raise Refused(404, "no_original", "the library keeps no file of this document now") from None
    headers["Content-Length"] = str(size)
    return StreamingResponse(_pieces(handle), media_type=media, headers=headers)


def _opened(file: Path) -> tuple[BinaryIO, int]:
    handle = file.open("rb")
    return handle, os.fstat(handle.fileno()).st_size


async def _pieces(handle: BinaryIO) -> AsyncIterator[bytes]:
    """The file in pieces read as the client takes them: a slow reader holds one piece, not the file."""
    try:
        while piece := await off_loop(handle.read, PIECE):
            yield piece
    finally:
        handle.close()
