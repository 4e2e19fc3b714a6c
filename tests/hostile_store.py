"""A store of record gone bad: a loopback proxy in front of a real `oxigraph serve` that passes
every request through, except a query whose text carries a marker, which it answers badly:

- `FLOOD`: a valid SPARQL JSON result that never ends (as a store answering a cartesian product);
- `TRICKLE`: headers, then the body one byte a second;
- `SLOWHEAD`: the status line and headers themselves one byte a second;
- `HOLD`: nothing at all, as a store computing a long answer;
- `STALL`: a few MB of a valid answer at once, then the rest one byte a second (an answer that
  has begun streaming, then stalls).

Each bad answer stops by itself after `LIMIT_SECONDS`, or when the client hangs up (counted in
`hung_up`).
"""

from __future__ import annotations

import socket
import threading
import time
from urllib.parse import unquote_plus

import httpx

LIMIT_SECONDS = 60.0
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/sparql-results+json\r\nConnection: close\r\n\r\n"
ROW = b'{"x": {"type": "literal", "value": "' + b"a" * 200 + b'"}},'


class HostileStore:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.bad_answers = 0
        self.hung_up = threading.Semaphore(0)  # released each time a client hangs up on a bad answer
        self._client = httpx.Client(timeout=120)
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._sock.close()
        self._client.close()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            request = _read_request(connection)
            if request is None:
                return
            method, path, headers, body = request
            text = unquote_plus(body.decode("utf-8", "replace"))
            for marker, answer in (
                ("FLOOD", _flood),
                ("TRICKLE", _trickle),
                ("SLOWHEAD", _slow_head),
                ("HOLD", _hold),
                ("STALL", _stall),
            ):
                if marker in text:
                    self.bad_answers += 1
                    try:
                        answer(connection)
                    except OSError:  # the client hung up: what a good client does
                        self.hung_up.release()
                    return
            relayed = self._client.request(method, self.upstream + path, headers=headers, content=body)
            head = f"HTTP/1.1 {relayed.status_code} X\r\n".encode()
            for name in ("content-type", "location"):
                if name in relayed.headers:
                    head += f"{name}: {relayed.headers[name]}\r\n".encode()
            head += f"Content-Length: {len(relayed.content)}\r\nConnection: close\r\n\r\n".encode()
            connection.sendall(head + relayed.content)


def _read_request(connection: socket.socket) -> tuple[str, str, dict[str, str], bytes] | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
    while len(body) < int(headers.get("content-length", "0")):
        chunk = connection.recv(65536)
        if not chunk:
            return None
        body += chunk
    kept = {k: v for k, v in headers.items() if k in ("content-type", "accept", "authorization")}
    return method, path, kept, body


def _flood(connection: socket.socket) -> None:
    connection.sendall(HEAD + b'{"head": {"vars": ["x"]}, "results": {"bindings": [')
    block, deadline = ROW * 5000, time.monotonic() + LIMIT_SECONDS
    while time.monotonic() < deadline:
        connection.sendall(block)


def _stall(connection: socket.socket) -> None:
    connection.sendall(HEAD + b'{"head": {"vars": ["x"]}, "results": {"bindings": [' + ROW * 15_000)
    _drip(connection, ROW * 100)


def _trickle(connection: socket.socket) -> None:
    connection.sendall(HEAD)
    _drip(connection, b'{"head": {"vars": ["x"]}, "results": {"bindings": []}}' * 100)


def _slow_head(connection: socket.socket) -> None:
    _drip(connection, HEAD * 100)


def _hold(connection: socket.socket) -> None:
    connection.settimeout(LIMIT_SECONDS)
    try:
        closed = connection.recv(1) == b""
    except TimeoutError:
        return
    if closed:
        raise ConnectionResetError  # the client hung up


def _drip(connection: socket.socket, data: bytes) -> None:
    deadline = time.monotonic() + LIMIT_SECONDS
    for byte in data:
        if time.monotonic() > deadline:
            return
        connection.sendall(bytes([byte]))
        time.sleep(1.0)
