"""LLM clients: Claude through `anthropic`, any OpenAI-compatible endpoint, or none (offline).

`ChatModel` owns what every backend shares: bounded concurrency, retries for retryable
errors only (rate limits, overload, 5xx, connection failures; never authentication,
permission, quota or bad requests), a response cache keyed by the hash of the whole request,
and token accounting. A backend only turns one request into a `Completion` (or a stream of
text) and says which of its errors are retryable.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

log = logging.getLogger("sparqlrag.models")


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    input_tokens: int
    output_tokens: int
    cached: bool = False


class LLMError(Exception):
    """The model could not answer; the message is safe to show and says what to fix."""


class LLMAuthError(LLMError):
    """The key or endpoint refused us (401/403): retrying cannot help."""


@dataclass
class Usage:
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Retryable:
    """An error worth another attempt, after `after` seconds if the server said so."""

    error: Exception
    after: float | None = None


class ResponseCache:
    """Completions by request hash, in SQLite (path) or memory (None)."""

    def __init__(self, path: Path | None) -> None:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(":memory:" if path is None else str(path), check_same_thread=False)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS completions (key TEXT PRIMARY KEY, text TEXT, model TEXT, "
            "input_tokens INTEGER, output_tokens INTEGER)"
        )
        self._lock = asyncio.Lock()

    async def get(self, key: str) -> Completion | None:
        async with self._lock:
            row = await asyncio.to_thread(
                lambda: self._db.execute(
                    "SELECT text, model, input_tokens, output_tokens FROM completions WHERE key = ?", (key,)
                ).fetchone()
            )
        if row is None:
            return None
        text, model, input_tokens, output_tokens = row
        return Completion(text, model, input_tokens, output_tokens, cached=True)

    async def put(self, key: str, completion: Completion) -> None:
        values = (key, completion.text, completion.model, completion.input_tokens, completion.output_tokens)

        def write() -> None:
            with self._db:
                self._db.execute("INSERT OR REPLACE INTO completions VALUES (?, ?, ?, ?, ?)", values)

        async with self._lock:
            await asyncio.to_thread(write)


@dataclass
class ChatModel(ABC):
    """The shared behaviour of every backend; subclasses implement `_request` and `_stream`."""

    model: str
    max_concurrency: int = 4
    max_retries: int = 4
    backoff: float = 1.0  # seconds before the first retry; doubles, with jitter
    cache: ResponseCache | None = None
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        self._slots = asyncio.Semaphore(self.max_concurrency)

    @property
    def name(self) -> str:
        return f"{type(self).provider}:{self.model}"  # type: ignore[attr-defined]

    def _key(self, prompt: str, system: str | None, max_tokens: int, temperature: float) -> str:
        request = json.dumps([self.name, system, prompt, max_tokens, temperature])
        return hashlib.sha256(request.encode()).hexdigest()

    async def complete(
        self, prompt: str, *, system: str | None = None, max_tokens: int = 2048, temperature: float = 0.0
    ) -> Completion:
        """The model's answer, from the cache when this exact request was answered before."""
        key = self._key(prompt, system, max_tokens, temperature)
        if self.cache is not None and (hit := await self.cache.get(key)) is not None:
            self.usage.cache_hits += 1
            return hit
        completion = await self._with_retries(lambda: self._request(prompt, system, max_tokens, temperature))
        self.usage.calls += 1
        self.usage.input_tokens += completion.input_tokens
        self.usage.output_tokens += completion.output_tokens
        if self.cache is not None:
            await self.cache.put(key, completion)
        return completion

    async def stream(
        self, prompt: str, *, system: str | None = None, max_tokens: int = 2048, temperature: float = 0.0
    ) -> AsyncIterator[str]:
        """Text as it is generated. Only the connection is retried: once text has flowed, an
        error ends the stream (the caller has shown part of the answer already)."""
        async with self._slots:
            for attempt in range(self.max_retries + 1):
                started = False
                try:
                    async for piece in self._stream(prompt, system, max_tokens, temperature):
                        started = True
                        yield piece
                    self.usage.calls += 1
                    return
                except Exception as error:
                    retry = self._classify(error)
                    if started or retry is None or attempt == self.max_retries:
                        raise self._final(error) from error
                    self.usage.retries += 1
                    await asyncio.sleep(self._delay(attempt, retry))

    async def _with_retries(self, call: Callable[[], Awaitable[Completion]]) -> Completion:
        async with self._slots:
            for attempt in range(self.max_retries + 1):
                try:
                    return await call()
                except Exception as error:
                    retry = self._classify(error)
                    if retry is None or attempt == self.max_retries:
                        raise self._final(error) from error
                    self.usage.retries += 1
                    await asyncio.sleep(self._delay(attempt, retry))
        raise AssertionError("unreachable")

    def _delay(self, attempt: int, retry: Retryable) -> float:
        if retry.after is not None:
            return min(retry.after, 60.0)
        return float(self.backoff * (2**attempt) * (0.5 + random.random()))

    def _final(self, error: Exception) -> LLMError:
        if isinstance(error, LLMError):
            return error
        log.warning("%s failed: %s", self.name, error)  # the upstream's words, for the operator only
        return LLMError(f"{self.name} failed: {_described(error)}")

    @abstractmethod
    async def _request(self, prompt: str, system: str | None, max_tokens: int, temperature: float) -> Completion: ...

    @abstractmethod
    def _stream(self, prompt: str, system: str | None, max_tokens: int, temperature: float) -> AsyncIterator[str]: ...

    @abstractmethod
    def _classify(self, error: Exception) -> Retryable | None:
        """Retryable(error) if another attempt may succeed; None to give up. May raise LLMAuthError."""


def _retry_after(headers: httpx.Headers | None) -> float | None:
    value = (headers or httpx.Headers()).get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


@dataclass
class AnthropicModel(ChatModel):
    """Claude through the official `anthropic` client (its own retries off: ours apply)."""

    provider = "anthropic"
    api_key: str | None = None
    base_url: str | None = None
    timeout: float = 120.0

    def __post_init__(self) -> None:
        super().__post_init__()
        import anthropic

        if not self.api_key:
            raise LLMAuthError('no Anthropic API key: set ANTHROPIC_API_KEY, or use llm = "none" to work offline')
        self._anthropic = anthropic
        self._client = anthropic.AsyncAnthropic(
            api_key=self.api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout
        )

    def _arguments(self, prompt: str, system: str | None, max_tokens: int, temperature: float) -> dict[str, Any]:
        # Current Claude models take no sampling temperature (the client no longer accepts it);
        # it stays part of the cache key and is honoured by the OpenAI-compatible backend.
        arguments: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": prompt}],
        }
        if system:
            arguments["system"] = system
        return arguments

    async def _request(self, prompt: str, system: str | None, max_tokens: int, temperature: float) -> Completion:
        message = await self._client.messages.create(**self._arguments(prompt, system, max_tokens, temperature))
        text = "".join(block.text for block in message.content if getattr(block, "type", "") == "text")
        return Completion(text, message.model, message.usage.input_tokens, message.usage.output_tokens)

    async def _stream(self, prompt: str, system: str | None, max_tokens: int, temperature: float) -> AsyncIterator[str]:
        async with self._client.messages.stream(**self._arguments(prompt, system, max_tokens, temperature)) as stream:
            async for text in stream.text_stream:
                yield text
            final = await stream.get_final_message()
        self.usage.input_tokens += final.usage.input_tokens
        self.usage.output_tokens += final.usage.output_tokens

    def _classify(self, error: Exception) -> Retryable | None:
        a = self._anthropic
        if isinstance(error, (a.AuthenticationError, a.PermissionDeniedError)):
            raise LLMAuthError(f"Anthropic refused the API key (HTTP {error.status_code})") from error
        if isinstance(error, a.RateLimitError):
            return Retryable(error, _retry_after(error.response.headers))
        if isinstance(error, a.APIStatusError):
            # 529 overloaded and 5xx are transient; other 4xx (bad request, quota) are not.
            return Retryable(error, _retry_after(error.response.headers)) if error.status_code >= 500 else None
        if isinstance(error, (a.APIConnectionError, a.APITimeoutError)):
            return Retryable(error)
        return None


@dataclass
class OpenAICompatibleModel(ChatModel):
    """Any `/v1/chat/completions` server: Ollama, vLLM, llama.cpp server, LM Studio, OpenAI."""

    provider = "openai"
    base_url: str = "http://127.0.0.1:11434/v1"
    api_key: str | None = None
    timeout: float = 300.0

    def __post_init__(self) -> None:
        super().__post_init__()
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        self._client = httpx.AsyncClient(base_url=self.base_url.rstrip("/"), headers=headers, timeout=self.timeout)

    def _body(
        self, prompt: str, system: str | None, max_tokens: int, temperature: float, stream: bool
    ) -> dict[str, Any]:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        return {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": stream,
        }

    async def _request(self, prompt: str, system: str | None, max_tokens: int, temperature: float) -> Completion:
        response = await self._client.post(
            "/chat/completions", json=self._body(prompt, system, max_tokens, temperature, False)
        )
        response.raise_for_status()
        try:
            data = response.json()
            text = data["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise LLMError(f"{self.name} answered something that is not a chat completion") from error
        usage = data.get("usage") or {}
        return Completion(
            text, data.get("model", self.model), usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
        )

    async def _stream(self, prompt: str, system: str | None, max_tokens: int, temperature: float) -> AsyncIterator[str]:
        body = self._body(prompt, system, max_tokens, temperature, True)
        async with self._client.stream("POST", "/chat/completions", json=body) as response:
            response.raise_for_status()
            async for line in response.aiter_lines():
                payload = line.removeprefix("data:").strip()
                if not line.startswith("data:") or payload == "[DONE]":
                    continue
                try:
                    delta = json.loads(payload)["choices"][0].get("delta", {}).get("content")
                except (ValueError, KeyError, IndexError) as error:
                    raise LLMError(f"{self.name} sent a malformed stream event") from error
                if delta:
                    yield delta

    def _classify(self, error: Exception) -> Retryable | None:
        if isinstance(error, httpx.HTTPStatusError):
            status = error.response.status_code
            if status in (401, 403):
                raise LLMAuthError(f"{self.base_url} refused the API key ({status})") from error
            if status == 429 or status >= 500:
                return Retryable(error, _retry_after(error.response.headers))
            return None
        if isinstance(error, httpx.TransportError):
            return Retryable(error)
        return None


def _described(error: Exception) -> str:
    """A failure in our words: its HTTP status, or its kind. What the upstream said is never
    passed on to a client (it may hold anything, its own request ids and hints among them)."""
    response = getattr(error, "response", None)
    status = getattr(error, "status_code", None) or getattr(response, "status_code", None)
    return f"HTTP {status}" if isinstance(status, int) else f"{type(error).__name__} (no answer)"
