"""What a connection may hold (issue 51, hole 3): idle connections cannot keep others out, a
client that stops reading is cut off instead of holding the original file or the store's
threads, and Graph Store reads are a client's queries (its deadline, its admission), so the
server's own calls never wait behind them."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.conftest import LiveServer, start_server
from tests.documents_made import pdf_of

ADMIN, READER = "admin", "reader"
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live, stop = start_server(
        tmp_path_factory.mktemp("connections"),
        write_tokens=[ADMIN],
        read_tokens=[READER],
        max_connections=60,
        max_connections_per_address=30,
        max_concurrent_queries=4,
        send_timeout=3,
        answer_rate=0,
    )
    yield live
    stop()


def _port(server: LiveServer) -> int:
    return int(server.url.rsplit(":", 1)[1])


def _stalled(server: LiveServer, request: bytes) -> socket.socket:
    """A connection that sends `request` and then reads nothing (a tiny receive window)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", _port(server)))
    sock.sendall(request)
    return sock


def _drain(sock: socket.socket, timeout: float = 60) -> tuple[int, bool]:
    """(bytes read, whether the server ended the connection) reading until it ends or stalls."""
    sock.settimeout(timeout)
    read = 0
    try:
        while chunk := sock.recv(MiB):
            read += len(chunk)
    except TimeoutError:
        return read, False
    except OSError:
        return read, True
    return read, True


def test_idle_connections_do_not_keep_anyone_out(server: LiveServer) -> None:
    idle = [socket.create_connection(("127.0.0.1", _port(server))) for _ in range(200)]
    try:
        with server.client(ADMIN, timeout=30) as admin:
            statuses = [admin.get("/api/v1/collections").status_code for _ in range(10)]
        assert statuses == [200] * 10
        time.sleep(0.5)
        still_open = 0
        for sock in idle:
            sock.setblocking(False)
            try:
                still_open += sock.recv(1) != b""
            except BlockingIOError:
                still_open += 1
            except OSError:
                pass
        assert still_open <= 30  # the address's longest-idle connections were closed
    finally:
        for sock in idle:
            sock.close()


def _big_pdf(size: int) -> bytes:
    """A one-line PDF carrying `size` random bytes in an unreferenced stream (a scan's weight, say)."""
    text = b"BT /F1 12 Tf 72 700 Td (Heavy annex of the report.) Tj ET"
    return pdf_of(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>",
            b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream",
            b"<< /Length %d >>\nstream\n" % size + os.urandom(size) + b"\nendstream",
        ]
    )


def test_a_reader_that_stops_reading_an_original_is_cut_off(server: LiveServer) -> None:
    data = _big_pdf(24 * MiB)
    with server.client(ADMIN, timeout=120) as admin:
        made = admin.post("/api/v1/documents", files=[("file", ("annex.pdf", data, "application/pdf"))])
        assert made.status_code == 201, made.text
        whole = admin.get("/file/doc/default/annex.pdf")
        assert whole.content == data  # a reader that reads gets it all, streamed from disk
    get = b"GET /file/doc/default/annex.pdf HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer reader\r\n\r\n"
    stalled = [_stalled(server, get) for _ in range(3)]
    try:
        time.sleep(server.settings.send_timeout + 3)
        for sock in stalled:
            read, ended = _drain(sock)
            assert ended and read < len(data), read  # cut off, not sent the rest once it came back
    finally:
        for sock in stalled:
            sock.close()


def test_stalled_graph_reads_hold_neither_the_store_nor_more_than_the_clients_share(
    server: LiveServer,
) -> None:
    graph = server.settings.base_iri + "graph/big"
    triples = "".join(f'<http://e/s{i}> <http://e/p> "{"x" * 200} {i}" .\n' for i in range(40_000))
    with server.client(ADMIN, timeout=120) as admin:
        put = admin.put("/store", params={"graph": graph}, content=triples, headers={"Content-Type": "text/turtle"})
        assert put.status_code in (201, 204), put.text
    get = (
        f"GET /store?graph={graph} HTTP/1.1\r\nHost: localhost\r\nAccept: application/n-triples\r\n"
        "Authorization: Bearer reader\r\n\r\n"
    ).encode()
    stalled = [_stalled(server, get) for _ in range(4)]  # the client's whole share of queries
    try:
        time.sleep(1)
        with server.client(READER, timeout=30) as reader:  # a fifth is over the client's share
            refused = reader.get("/store", params={"graph": graph}, headers={"Accept": "application/n-triples"})
            assert refused.status_code == 429 and refused.json()["error"] == "too_many_queries", refused.text
        answered: list[int] = []

        def admins_work() -> None:
            with server.client(ADMIN, timeout=60) as admin:
                answered.append(admin.get("/api/v1/collections").status_code)
                answered.append(admin.get("/api/v1/documents").status_code)
                made = admin.post("/api/v1/documents", json={"id": "while-stalled", "text": "Ada wrote notes."})
                answered.append(made.status_code)

        work = threading.Thread(target=admins_work)
        work.start()
        work.join(60)
        assert answered == [200, 200, 201]
    finally:
        for sock in stalled:
            sock.close()
    with server.client(READER, timeout=60) as reader:  # and the client's share is its own again
        for _ in range(100):
            again = reader.get("/store", params={"graph": graph}, headers={"Accept": "application/n-triples"})
            if again.status_code != 429:
                break
            time.sleep(0.2)
        assert again.status_code == 200 and len(again.content) > 8 * MiB


def test_an_idle_keep_alive_connection_is_closed(server: LiveServer) -> None:
    """A keep-alive connection left idle after its answer is closed after keep_alive_timeout."""
    sock = socket.create_connection(("127.0.0.1", _port(server)))
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        sock.settimeout(server.settings.keep_alive_timeout + 20)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        assert received.startswith(b"HTTP/1.1 200")  # answered, then closed once idle
    finally:
        sock.close()
