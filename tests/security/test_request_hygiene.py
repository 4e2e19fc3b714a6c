"""Malformed requests get a 4xx naming the problem, with no exception text and no other server's
body; a client that stops sending cannot hold a connection."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import LiveServer, start_server
from tests.security.conftest import READ, WRITE, Listener, snapshot, sparql, still_serving


@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/api/v1/documents?collection=default%0A"),
        ("GET", "/api/v1/traces?collection=default%0A"),
        ("GET", "/api/v1/collections/default%0A"),
        ("DELETE", "/api/v1/collections/default%0A"),
        ("PUT", "/api/v1/ontologies/pets%0A"),
        ("GET", "/api/v1/ontologies/pets%0A"),
        ("GET", "/api/v1/traces/0123456789abcdef0123456789abcdef%0A"),
    ],
)
def test_names_ending_in_a_newline_are_client_errors(hostile: LiveServer, method: str, path: str) -> None:
    before = snapshot(hostile)
    with hostile.client(WRITE) as client:
        response = client.request(
            method,
            path,
            content=b"<http://a> a <http://www.w3.org/2002/07/owl#Class> .",
            headers={"Content-Type": "text/turtle"},
        )
    assert 400 <= response.status_code < 500, response.text
    assert snapshot(hostile) == before


@pytest.mark.parametrize("graph", ["http://x/a>", "", "no scheme", "http://x/ a"])
def test_bad_dataset_iris_are_400_without_exception_text(hostile: LiveServer, graph: str) -> None:
    for name in ("default-graph-uri", "named-graph-uri"):
        with hostile.client(READ) as client:
            response = client.get("/sparql", params={"query": "ASK {}", name: graph})
        assert response.status_code == 400, response.text
        assert response.json()["error"] == "syntax_error" and "No scheme found" not in response.text


def test_remote_failures_never_show_the_remote_body(tmp_path, listener: Listener) -> None:
    """With remote access allowed, a failing SERVICE or LOAD is the client's 400, and what the
    remote server said stays out of it."""
    server, stop = start_server(tmp_path / "remote", allow_remote=True)
    try:
        seen = len(listener.contacts)
        for kind, text in [
            ("query", f"SELECT * WHERE {{ SERVICE <{listener.url('svc')}> {{ ?a ?b ?c }} }}"),
            ("update", f"LOAD <{listener.url('data.ttl')}>"),
        ]:
            response = sparql(server, "", kind, text)
            assert response.status_code == 400, response.text
            assert response.json()["error"] == "remote_source_failed"
            assert Listener.SECRET.decode() not in response.text and "500" not in response.json()["detail"]
        assert len(listener.contacts) == seen + 2  # they did reach out: remote access is on here
    finally:
        stop()
        listener.contacts.clear()


def test_invalid_utf8_in_a_query_string_is_400(hostile: LiveServer) -> None:
    with hostile.client(READ) as client:
        for path in ["/sparql?query=%FF", "/api/v1/documents?collection=%C3%28"]:
            response = client.get(path)
            assert (response.status_code, response.json()["error"]) == (400, "bad_encoding"), path


def test_a_body_shorter_than_its_length_times_out(hostile: LiveServer) -> None:
    host, port = hostile.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:  # a held connection times recv out
        sock.sendall(
            b"POST /sparql HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "
            + READ.encode()
            + b"\r\nContent-Type: application/sparql-query\r\nContent-Length: 1000\r\n\r\nASK {"
        )
        still_serving(hostile)  # served meanwhile
        response = b""
        while chunk := sock.recv(4096):
            response += chunk
    assert response.startswith(b"HTTP/1.1 408"), response[:200]
    assert b"body_timeout" in response  # and the loop ended at EOF: the server closed the connection
