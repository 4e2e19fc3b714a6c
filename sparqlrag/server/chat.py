"""`/v1/models` and `/v1/chat/completions`: the OpenAI wire format, so the official client and
chat front ends (Open WebUI, LibreChat...) need only a base URL and a key. The key is a bearer
token of this server; every error is in OpenAI's shape, `{"error": {"message", "type", "code"}}`.
Ollama's pair, `/api/tags` and `/api/chat`, answers the same way in Ollama's shapes (newline-
delimited JSON when streamed, the default there; errors as `{"error": message}`).
"""

from __future__ import annotations

import functools
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from sparqlrag.operations import chat
from sparqlrag.operations.collection import open_collection
from sparqlrag.operations.failures import described, unexpected
from sparqlrag.operations.requests import ChatRequest, OllamaChat, validated
from sparqlrag.server.auth import authorize
from sparqlrag.server.contracts import parsed
from sparqlrag.server.endpoints import Handler
from sparqlrag.server.rate_limit import limit_answers
from sparqlrag.server.state import state_of

log = logging.getLogger("sparqlrag.server")
STARTED = int(time.time())  # a model's "created": a collection's creation is not kept
TYPES = {401: "authentication_error", 403: "permission_error", 404: "invalid_request_error", 429: "rate_limit_exceeded"}


def error_body(status: int, code: str, message: str) -> dict[str, Any]:
    kind = TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def refusing_as(shape: Callable[[int, str, str], dict[str, Any]]) -> Callable[[Handler], Handler]:
    """A decorator: the handler's failures answered as `shape(status, code, message)` makes
    them (with the status and message every surface gives them, operations/failures.py)."""

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def answered(request: Request) -> Response:
            try:
                return await handler(request)
            except Exception as error:
                status, code, message = described(error)
                if unexpected(error, status):
                    log.error("%s %s failed", request.method, request.url.path, exc_info=error)
                headers = getattr(error, "headers", None)
                return JSONResponse(shape(status, code, message), status_code=status, headers=headers)

        return answered

    return decorate


openai_errors = refusing_as(error_body)
ollama_errors = refusing_as(lambda status, code, message: {"error": message})


def _model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": STARTED, "owned_by": "sparqlrag"}


@openai_errors
async def list_models(request: Request) -> Response:
    access = authorize(request, "read", per_collection=True)
    names = await chat.models(state_of(request).services, access)
    return JSONResponse({"object": "list", "data": [_model(name) for name in names]})


@openai_errors
async def get_model(request: Request) -> Response:
    access = authorize(request, "read", per_collection=True)
    name = await chat.model_of(state_of(request).services, access, request.path_params["model"])
    return JSONResponse(_model(name))


@openai_errors
async def chat_completions(request: Request) -> Response:
    access = authorize(request, "read", per_collection=True)
    limit_answers(request)
    asked = await parsed(request, ChatRequest)
    services = state_of(request).services
    name = await chat.model_of(services, access, asked.model)
    collection = await open_collection(services, name, access)
    reply = chat.Reply()
    head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time()), "model": name}
    if asked.stream:
        return StreamingResponse(
            _chunks(chat.pieces(collection, asked, reply), reply, head),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )
    async for _ in chat.pieces(collection, asked, reply):
        pass
    return JSONResponse(
        head
        | {
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text}, "finish_reason": "stop"}],
            "usage": _usage(reply),
        }
    )


def _usage(reply: chat.Reply) -> dict[str, int]:
    prompt, completion = reply.usage.get("input_tokens", 0), reply.usage.get("output_tokens", 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


async def _chunks(pieces: AsyncIterator[str], reply: chat.Reply, head: dict[str, Any]) -> AsyncIterator[bytes]:
    """`chat.completion.chunk` events, the role first and `finish_reason` last, then
    `data: [DONE]`; a failure once the stream has begun is an error event in OpenAI's shape."""

    def event(delta: dict[str, str], finish: str | None = None, **more: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = head | {"object": "chat.completion.chunk", "choices": [choice]} | more
        return f"data: {json.dumps(body)}\n\n".encode()

    try:
        yield event({"role": "assistant", "content": ""})
        async for piece in pieces:
            yield event({"content": piece})
        yield event({}, "stop", usage=_usage(reply))
    except Exception as error:
        log.exception("chat stream failed")
        status, code, message = described(error)
        yield f"data: {json.dumps(error_body(status, code, message))}\n\n".encode()
    yield b"data: [DONE]\n\n"


@ollama_errors
async def ollama_tags(request: Request) -> Response:
    access = authorize(request, "read", per_collection=True)
    names = await chat.models(state_of(request).services, access)
    made = datetime.fromtimestamp(STARTED, UTC).isoformat()
    listed = [
        {"name": name, "model": name, "modified_at": made, "size": 0, "digest": "", "details": {}} for name in names
    ]
    return JSONResponse({"models": listed})


@ollama_errors
async def ollama_chat(request: Request) -> Response:
    """Ollama's `/api/chat`: its body read as a chat completion's (`stream` is true unless it
    says otherwise, as in Ollama; a message's `images` are not read: 400)."""
    access = authorize(request, "read", per_collection=True)
    limit_answers(request)
    body = await parsed(request, OllamaChat)
    asked = validated(ChatRequest, {"model": body.model, "messages": body.messages, "stream": body.stream})
    services = state_of(request).services
    name = await chat.model_of(services, access, asked.model)
    collection = await open_collection(services, name, access)
    reply = chat.Reply()

    def line(content: str, done: bool) -> dict[str, Any]:
        made = datetime.now(UTC).isoformat()
        return {"model": name, "created_at": made, "message": {"role": "assistant", "content": content}, "done": done}

    if asked.stream:

        async def lines() -> AsyncIterator[bytes]:
            try:
                async for piece in chat.pieces(collection, asked, reply):
                    yield (json.dumps(line(piece, False)) + "\n").encode()
                yield (json.dumps(line("", True) | {"done_reason": "stop"}) + "\n").encode()
            except Exception as error:
                log.exception("chat stream failed")
                yield (json.dumps({"error": described(error)[2]}) + "\n").encode()

        return StreamingResponse(lines(), media_type="application/x-ndjson")
    async for _ in chat.pieces(collection, asked, reply):
        pass
    return JSONResponse(line(reply.text, True) | {"done_reason": "stop"})
