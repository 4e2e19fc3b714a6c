"""The hostile probe's setting: a server on loopback with a write token `w1` and a read token
`r1`, and a listener the test owns that records every contact. With remote access off (the
default), nothing a client sends may reach that listener."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LiveServer, start_server

WRITE, READ = "w1", "r1"


class Listener:
    """A loopback TCP port that records each connection and the first bytes it was sent.

    `reply` is sent back (an HTTP error with a body nobody may ever see); `hang` never answers,
    as a port behind a firewall that drops packets would not."""

    SECRET = b"listener-secret-body"

    def __init__(self, hang: bool = False) -> None:
        self.hang = hang
        self.contacts: list[bytes] = []
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port = self._sock.getsockname()[1]
        self._held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def url(self, path: str = "x") -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._sock.accept()
            except OSError:
                return  # closed
            connection.settimeout(2)
            try:
                self.contacts.append(connection.recv(4096))
            except OSError:
                self.contacts.append(b"")
            if self.hang:
                self._held.append(connection)
                continue
            body = self.SECRET
            connection.sendall(
                b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
                + body
            )
            connection.close()

    def close(self) -> None:
        self._sock.close()
        for connection in self._held:
            connection.close()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    opened = Listener()
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The probe's server: tokens w1 (write) and r1 (read), small limits so bombs are quick to build."""
    server, stop = start_server(
        tmp_path_factory.mktemp("hostile"),
        write_tokens=[WRITE],
        read_tokens=[READ],
        body_timeout=2,
        max_ontology_bytes=1 << 20,
    )
    yield server
    stop()


def snapshot(server: LiveServer) -> list[bytes]:
    """Every quad in the store, sorted: equal snapshots mean an unchanged store."""
    with server.client(WRITE) as client:
        response = client.get("/store", headers={"Accept": "application/n-quads"})
    assert response.status_code == 200, response.text
    return sorted(response.content.splitlines())


def still_serving(server: LiveServer) -> None:
    """Another client is served at once."""
    with server.client(READ, timeout=10) as client:
        response = client.get(
            "/sparql", params={"query": "ASK { }"}, headers={"Accept": "application/sparql-results+json"}
        )
    assert response.status_code == 200 and response.json()["boolean"] is True


def sparql(server: LiveServer, token: str, kind: str, text: str, **params: Any) -> Any:
    """A query or update sent as the protocol's direct POST."""
    with server.client(token, timeout=30) as client:
        return client.post(
            "/sparql",
            content=text.encode(),
            params=params,
            headers={"Content-Type": f"application/sparql-{kind}", "Accept": "application/sparql-results+json"},
        )


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret.nt"
    path.write_text('<http://secret.example/s> <http://secret.example/p> "the-secret-value" .\n')
    return path
