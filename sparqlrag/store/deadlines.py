"""Total deadlines, cancellation and size caps for requests to a remote store.

httpx's timeouts bound each socket operation, so a store that sends one byte a second meets
every one of them and is never cut off. Here every read, write and connect a request makes
waits at most until the deadline of the call it belongs to (`deadline`, per thread), headers
included; a call whose client has hung up is cut off at once (the server sets a `Cancel` in
CANCEL, which `asyncio.to_thread` carries into the thread making the call, and setting it shuts
the sockets the call is using); and an answer is read in pieces and refused once it passes its
byte cap, so a store that streams an endless result costs the cap, not the server's memory.
"""

from __future__ import annotations

import io
import socket
import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

_calls = threading.local()  # .at: the monotonic time the running call must end by; .cancel: its Cancel


class Cancel:
    """Set when the client a call works for has gone: the sockets the call uses are shut."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: set[httpcore.NetworkStream] = set()
        self.is_set = False

    def set(self) -> None:
        with self._lock:
            self.is_set = True
            streams, self._streams = self._streams, set()
        for stream in streams:
            _shut(stream)

    def forget(self) -> None:
        """The call has ended: its streams go back to the pool, and a later set() leaves them be."""
        with self._lock:
            self._streams.clear()

    def watch(self, stream: httpcore.NetworkStream) -> None:
        with self._lock:
            if not self.is_set:
                self._streams.add(stream)
                return
        _shut(stream)


def _shut(stream: httpcore.NetworkStream) -> None:
    """Wake a read blocked on the stream's socket from another thread (it then reads EOF)."""
    sock = stream.get_extra_info("socket")
    if isinstance(sock, socket.socket):
        with suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


CANCEL: ContextVar[Cancel | None] = ContextVar("sparqlrag_store_cancel", default=None)


@contextmanager
def deadline(seconds: float) -> Iterator[Cancel | None]:
    """Every request this thread makes inside the block ends within `seconds` of its start (a
    nested block cannot extend an outer one), or at once when CANCEL's Cancel is set; yields it."""
    outer: float | None = getattr(_calls, "at", None)
    outer_cancel: Cancel | None = getattr(_calls, "cancel", None)
    at = time.monotonic() + seconds
    _calls.at, _calls.cancel = (at if outer is None else min(at, outer)), CANCEL.get()
    try:
        yield _calls.cancel
    finally:
        if _calls.cancel is not None:
            _calls.cancel.forget()
        _calls.at, _calls.cancel = outer, outer_cancel


def _left(timeout: float | None, expired: type[Exception]) -> float | None:
    """The socket timeout an operation gets: its own, cut to what is left of the call's time."""
    cancel: Cancel | None = getattr(_calls, "cancel", None)
    if cancel is not None and cancel.is_set:
        raise httpcore.ReadError("the client has gone")
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
        self._watched()
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._watched()
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def _watched(self) -> None:
        """Shut by the running call's Cancel, if it has one (a pooled stream serves many calls)."""
        cancel: Cancel | None = getattr(_calls, "cancel", None)
        if cancel is not None:
            cancel.watch(self._inner)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> object:
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
    """An answer passed its byte cap; raised by `capped_pieces`."""


def capped_pieces(response: httpx.Response, cap: int) -> Iterator[bytes]:
    """The body of a streamed response as it arrives; AnswerTooLarge once it passes `cap` bytes
    (before the first piece when the answer says it will)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise AnswerTooLarge
    size = 0
    for piece in response.iter_bytes():
        size += len(piece)
        if size > cap:
            raise AnswerTooLarge
        yield piece


def read_capped(response: httpx.Response, cap: int) -> bytes:
    return b"".join(capped_pieces(response, cap))


class CappedBody(io.RawIOBase):
    """A streamed response's body as a file a parser reads as the answer arrives (capped_pieces)."""

    def __init__(self, response: httpx.Response, cap: int) -> None:
        self._pieces, self._held = capped_pieces(response, cap), b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._held:
            piece = next(self._pieces, None)
            if piece is None:
                return 0
            self._held = piece
        taken = min(len(buffer), len(self._held))
        buffer[:taken] = self._held[:taken]
        self._held = self._held[taken:]
        return taken
