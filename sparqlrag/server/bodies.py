"""Request bodies read under a size limit: small ones into memory, uploads into a temp file."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

from starlette.requests import Request
from starlette.types import Message

from sparqlrag.operations.failures import Refused
from sparqlrag.server.state import state_of


def _too_large(limit: int) -> Refused:
    return Refused(413, "body_too_large", f"the request body is larger than the {limit} byte limit")


def _declared_length(request: Request, limit: int) -> None:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)


async def read_body(request: Request, limit: int) -> bytes:
    _declared_length(request, limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


async def spool_body(request: Request, limit: int, directory: Path) -> Path:
    """Write the body to a temp file in `directory` (the caller deletes it)."""
    _declared_length(request, limit)
    directory.mkdir(parents=True, exist_ok=True)
    size = 0
    with tempfile.NamedTemporaryFile(dir=directory, prefix="upload-", delete=False) as out:
        path = Path(out.name)
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise _too_large(limit)
                out.write(chunk)
        except BaseException:
            out.close()
            path.unlink(missing_ok=True)
            raise
    return path


def bounded(request: Request, limit: int) -> Request:
    """The request with its body cut off past `limit` bytes (413), declared or chunked: for
    multipart forms, which starlette parses whole before a handler could count."""
    _declared_length(request, limit)
    received = 0

    async def receive() -> Message:
        nonlocal received
        message = await request.receive()
        received += len(message.get("body", b""))
        if received > limit:
            raise _too_large(limit)
        return message

    return Request(request.scope, receive)


def scratch_path(request: Request, prefix: str) -> Path:
    """A fresh file name in the scratch directory, for a response written to disk first."""
    directory: Path = state_of(request).scratch_dir
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{prefix}-{uuid.uuid4().hex}"


def decode_utf8(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Refused(400, "bad_encoding", f"the {what} is not valid UTF-8: {error}") from error
