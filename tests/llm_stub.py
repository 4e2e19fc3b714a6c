"""A loopback stub of the Anthropic Messages API (plain and streamed) and of OpenAI chat completions.

Tests script the replies (`stub.script(...)`); the real `anthropic` client (and httpx for the
OpenAI-compatible backend) talks to it over HTTP. Unscripted requests get `stub.default`.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.conftest import listening_socket, serve_in_thread


@dataclass
class Reply:
    """One scripted answer: text with token counts, or an HTTP error."""

    text: str = ""
    status: int = 200
    error_type: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    fail_after: int | None = None  # streamed: this many text pieces, then Anthropic's "overloaded" error event
    piece_delay: float = 0.0  # streamed: seconds before each text piece
    input_tokens: int = 11
    output_tokens: int = 7


@dataclass
class MessagesStub:
    url: str = ""
    default: Reply = field(default_factory=lambda: Reply("stub answer"))
    requests: list[dict] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    streams_open: int = 0  # streamed answers still being sent (a client that hangs up ends its own)
    refuse_text: str | None = None  # a request whose body holds this text is refused (400), whatever is scripted
    _queue: list[Reply] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.max_in_flight = 0

    def _next(self, body: dict) -> Reply:
        with self._lock:
            self.requests.append(body)
            if self.refuse_text is not None and self.refuse_text in json.dumps(body):
                return Reply(status=400, error_type="invalid_request_error")
            return self._queue.pop(0) if self._queue else self.default

    async def _enter(self, reply: Reply) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(reply.delay)

    def _error(self, reply: Reply) -> Response:
        body = {"type": "error", "error": {"type": reply.error_type or "api_error", "message": f"stub {reply.status}"}}
        return JSONResponse(body, status_code=reply.status, headers=reply.headers)

    async def _serve(self, request: Request, answer: Callable[[dict, Reply], Response]) -> Response:
        """Record the request, take the next scripted reply, answer it (or fail as scripted)."""
        body = await request.json()
        reply = self._next(body)
        await self._enter(reply)
        try:
            return self._error(reply) if reply.status != 200 else answer(body, reply)
        finally:
            self.in_flight -= 1

    async def messages(self, request: Request) -> Response:
        return await self._serve(request, self._message)

    def _message(self, body: dict, reply: Reply) -> Response:
        if body.get("stream"):
            return StreamingResponse(self._events(body, reply), media_type="text/event-stream")
        return JSONResponse(
            {
                "id": "msg_stub",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": reply.text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
            }
        )

    async def _events(self, body: dict, reply: Reply) -> AsyncIterator[bytes]:
        def event(name: str, data: dict) -> bytes:
            return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

        message = {
            "id": "msg_stub",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": 0},
        }
        self.streams_open += 1
        try:
            yield event("message_start", {"type": "message_start", "message": message})
            yield event(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            )
            for number, piece in enumerate(_pieces(reply.text)):
                if number == reply.fail_after:
                    error = {"type": "overloaded_error", "message": "Overloaded at /internal/host-7"}
                    yield event("error", {"type": "error", "error": error})
                    return
                await asyncio.sleep(reply.piece_delay)
                yield event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}},
                )
        finally:
            self.streams_open -= 1
        yield event("content_block_stop", {"type": "content_block_stop", "index": 0})
        yield event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": reply.output_tokens},
            },
        )
        yield event("message_stop", {"type": "message_stop"})

    async def chat_completions(self, request: Request) -> Response:
        return await self._serve(request, self._chat_completion)

    @staticmethod
    def _chat_completion(body: dict, reply: Reply) -> Response:
        if body.get("stream"):

            async def chunks() -> AsyncIterator[bytes]:
                for piece in _pieces(reply.text):
                    yield f"data: {json.dumps({'choices': [{'delta': {'content': piece}}]})}\n\n".encode()
                yield b"data: [DONE]\n\n"

            return StreamingResponse(chunks(), media_type="text/event-stream")
        return JSONResponse(
            {
                "model": body["model"],
                "choices": [{"message": {"role": "assistant", "content": reply.text}}],
                "usage": {"prompt_tokens": reply.input_tokens, "completion_tokens": reply.output_tokens},
            }
        )


def _pieces(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def serve_stub() -> tuple[MessagesStub, Callable[[], None]]:
    stub = MessagesStub()
    app = Starlette(
        routes=[
            Route("/v1/messages", stub.messages, methods=["POST"]),
            Route("/v1/chat/completions", stub.chat_completions, methods=["POST"]),
        ]
    )
    sock = listening_socket()
    stub.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop = serve_in_thread(app, sock, "LLM stub")
    return stub, stop


@contextmanager
def stubbed_llm(owner: Any, *replies: Reply) -> Iterator[MessagesStub]:
    """`owner.llm` is the real Anthropic client talking to a fresh stub scripted with `replies`,
    until the block ends."""
    from sparqlrag.models.llm import AnthropicModel

    stub, stop = serve_stub()
    stub.script(*replies)
    owner.llm = AnthropicModel("claude-test", api_key="sk-test", base_url=stub.url)
    try:
        yield stub
    finally:
        owner.llm = None
        stop()
