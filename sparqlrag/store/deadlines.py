"""Total deadlines and size caps for requests to a remote store.

httpx's timeouts bound each socket operation, so a store that sends one byte a second meets
every one of them and is never cut off. Here every read, write and connect a request makes
waits at most until the deadline of the call it belongs to (`deadline`, per thread), headers
included; and an answer is read in pieces and refused once it passes its byte cap, so a store
that streams an endless result costs the cap, not the server's memory.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

_calls = threading.local()  # .at: the monotonic time the running call must end by


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every request this thread makes inside the block ends within `seconds` of its start
    (a nested block cannot extend an outer one)."""
    outer: float | None = getattr(_calls, "at", None)
    at = time.monotonic() + seconds
    _calls.at = at if outer is None else min(at, outer)
    try:
        yield
    finally:
        _calls.at = outer


def _left(timeout: float | None, expired: type[Exception]) -> float | None:
    """The socket timeout an operation gets: its own, cut to what is left of the call's time."""
    at: float | None = getattr(_calls, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise expired("the call's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20)  # httpx's own defaults


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's transport, its connections made through the deadline-keeping backend (httpx
    has no parameter for a network backend: the pool it builds is replaced by an equal one)."""

    def __init__(self, limits: httpx.Limits = LIMITS) -> None:
        super().__init__(limits=limits)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_Backend(),
        )


class AnswerTooLarge(Exception):
    """An answer passed its byte cap; raised by `read_capped`."""


def read_capped(response: httpx.Response, cap: int) -> bytes:
    """The body of a streamed response, read in pieces; AnswerTooLarge past `cap` bytes."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise AnswerTooLarge
    parts, size = [], 0
    for part in response.iter_bytes():
        size += len(part)
        if size > cap:
            raise AnswerTooLarge
        parts.append(part)
    return b"".join(parts)
