"""Server-sent events for the answer routes."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import StreamingResponse

from sparqlrag.server.errors import described

log = logging.getLogger("sparqlrag.server")


async def _events(events: AsyncIterator[tuple[str, dict[str, Any]]]) -> AsyncIterator[bytes]:
    """Each (name, data) pair as one event; a failure after the stream started becomes an
    "error" event (the status line is sent already)."""
    try:
        async for name, data in events:
            yield f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
    except Exception as error:
        log.exception("answer stream failed")
        _, code, detail = described(error)  # never the exception's own text unless written for clients
        yield f"event: error\ndata: {json.dumps({'error': code, 'detail': detail})}\n\n".encode()


def sse(events: AsyncIterator[tuple[str, dict[str, Any]]]) -> StreamingResponse:
    return StreamingResponse(_events(events), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


def wants_stream(stream: bool, accept: str) -> bool:
    """Whether to answer as server-sent events: `"stream": true`, or an Accept that asks for them."""
    return stream or "text/event-stream" in accept
