"""The server's HTTP/1.1 connections: uvicorn's httptools protocol with the limits it lacks.

uvicorn bounds neither the size of a request's head (request line and headers) nor the time a
client may take to send it: a 200 KB header line and 5,000 headers were accepted, and 1,200
connections that never finished their headers stayed open. Here a head over `max_header_bytes`
is answered 431 and one not finished within `header_timeout` seconds 408, each closing the
connection; and uvicorn's own `limit_concurrency` (max_connections) answers 503 beyond that
many connections. `uvicorn_config` is the one place the CLI and the tests configure uvicorn.

Connections that hold nothing must not keep others out: one client's 1,000 idle connections
made every other request 503 for as long as it kept them. So a new connection from an address
that has `max_connections_per_address` open closes that address's longest-idle one (a
connection with no request in flight: before its first request, or between requests), and
one that would bring the server to `max_connections` closes the server's longest-idle one;
only when none is idle is the newcomer answered 503. An idle keep-alive connection is closed
after `keep_alive_timeout` seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, ClassVar

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from sparqlrag.config import Settings

LINGER = 2.0  # seconds


class _Refused(Exception):
    """Raised from a parser callback to stop parsing a refused request."""


class GuardedHttp(HttpToolsProtocol):
    max_header_bytes = 32 * 1024
    header_timeout = 10.0
    max_per_address = 100
    by_address: ClassVar[dict[str, set[GuardedHttp]]] = {}  # (one per server: uvicorn_config makes the class)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_bytes = 0
        self._refused = False
        self._address = ""
        self._idle_since = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._idle_since = self.loop.time()
        self._address = self.client[0] if self.client else ""
        mine = self.by_address.setdefault(self._address, set())
        if len(mine) >= self.max_per_address and not _close_longest_idle(mine):
            self._refuse(503, "too many connections from this address", "max_connections_per_address")
            return
        limit = self.limit_concurrency
        if limit is not None and len(self.connections) >= limit and not _close_longest_idle(self.connections):
            self._refuse(503, "too many connections", "max_connections")
            return
        mine.add(self)
        self._head_begins()

    @property
    def idle(self) -> bool:
        """No request in flight: none started yet, or the last one answered."""
        return (self.cycle is None or self.cycle.response_complete) and not self.pipeline

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_begins()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._idle_since = self.loop.time()

    def _head_begins(self) -> None:
        """A request's head starts (a connection opened, or the next request on it)."""
        if self._head_timer is None:
            self._head_bytes = 0
            self._head_timer = self.loop.call_later(self.header_timeout, self._refuse, 408, "request head too slow")

    def on_headers_complete(self) -> None:
        self._head_ended()
        if len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers) > self.max_header_bytes:
            self._refuse(431, "request head too large")  # (a head that came in one piece)
            raise _Refused  # stops the parser; uvicorn's answer to a parser error is then not sent
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        if not self._refused:
            super().send_400_response(msg)

    def _head_ended(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def data_received(self, data: bytes) -> None:
        if self._refused:  # what the client still sends after the refusal is read and dropped
            return
        super().data_received(data)
        if self._head_timer is not None and not self.transport.is_closing():  # the head is still unfinished
            self._head_bytes += len(data)
            if self._head_bytes > self.max_header_bytes:
                self._refuse(431, "request head too large")

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_ended()
        mine = self.by_address.get(self._address)
        if mine is not None:
            mine.discard(self)
            if not mine:
                del self.by_address[self._address]
        super().connection_lost(exc)

    def _refuse(self, status: int, reason: str, setting: str | None = None) -> None:
        """Answer `status` (no request reached the app) and close the connection: our side at
        once, theirs after LINGER seconds of reading what they still send (closing with unread
        data would reset the connection, and the client could lose the answer)."""
        self._head_ended()
        if self.transport.is_closing() or self._refused:
            return
        self._refused = True
        limit = (
            f"at most {self.max_header_bytes} bytes within {self.header_timeout:g} s"
            if setting is None
            else f"try again later ({setting})"
        )
        body = f'{{"error": "{reason.replace(" ", "_")}", "detail": "{reason}: {limit}"}}'.encode()
        head = (
            f"HTTP/1.1 {status} {reason.title()}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        ).encode()
        self.transport.write(head + body)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER, self.transport.close)


def _close_longest_idle(connections: Iterable[object]) -> bool:
    """Close the connection of `connections` idle longest; False when none is idle."""
    idle = [
        connection
        for connection in connections
        if isinstance(connection, GuardedHttp) and connection.idle and not connection.transport.is_closing()
    ]
    if not idle:
        return False
    oldest = min(idle, key=lambda connection: connection._idle_since)
    oldest.transport.close()
    oldest.connections.discard(oldest)  # (counted out now: connection_lost comes a loop turn later)
    mine = oldest.by_address.get(oldest._address)
    if mine is not None:
        mine.discard(oldest)
    return True


def uvicorn_config(app: Any, settings: Settings, **options: Any) -> uvicorn.Config:
    """uvicorn's configuration for `app`, with the limits of `settings` (options: uvicorn's own)."""
    protocol = type(
        "GuardedHttp",
        (GuardedHttp,),
        {
            "max_header_bytes": settings.max_header_bytes,
            "header_timeout": settings.header_timeout,
            "max_per_address": settings.max_connections_per_address,
            "by_address": {},
        },
    )
    proxies: dict[str, Any] = {"proxy_headers": False}  # (uvicorn's default believes X-Forwarded-For from loopback)
    if settings.trusted_proxies:
        proxies = {"proxy_headers": True, "forwarded_allow_ips": settings.trusted_proxies}
    return uvicorn.Config(
        app,
        http=protocol,
        limit_concurrency=settings.max_connections,
        timeout_keep_alive=settings.keep_alive_timeout,
        **{**proxies, **options},
    )
