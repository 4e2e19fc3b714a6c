"""Streamed responses: server-sent events for the answer routes, and store answers that arrive
in pieces (SPARQL results, graphs)."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import Response, StreamingResponse

from sparqlrag.operations.failures import described
from sparqlrag.store.base import ResultStream, StoreError

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


def answer_response(answer: ResultStream, held: contextlib.AsyncExitStack | None = None) -> Response:
    """The store's answer: whole when it came whole, else streamed as it arrives; what `held`
    holds (the query's place among its client's running ones, its metrics) is let go once the
    last piece is out."""
    headers = {"Vary": "Accept"}
    if answer.rest is None:
        return Response(answer.head.body, media_type=answer.head.media_type, headers=headers)
    return StreamingResponse(
        _pieces(answer, held or contextlib.AsyncExitStack()), media_type=answer.head.media_type, headers=headers
    )


class AnswerCut(Exception):
    """A streamed answer failed after its status line went out: raised (and handled by no one)
    so the server cuts the connection."""


async def _pieces(answer: ResultStream, held: contextlib.AsyncExitStack) -> AsyncIterator[bytes]:
    """The pieces of an answer still arriving. If it fails on the way (its deadline, the byte
    cap), the error ends the response early, which cuts the connection: the client sees an
    incomplete answer, never a complete-looking short one."""
    assert answer.rest is not None
    try:
        async with held, contextlib.aclosing(answer.rest) as rest:  # (`held` sees the error as it is)
            yield answer.head.body
            async for piece in rest:
                yield piece
    except StoreError as error:
        _, code, _ = described(error)
        log.warning("a streamed answer was cut after its start: %s", code)
        raise AnswerCut(code) from None
