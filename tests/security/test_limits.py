"""The lesser holes of issue 35 and the inputs it asked to be probed: request heads that are too
large, too many or too slow; knowledge cores with thousands of members, paths or links as
members; Graph RAG and Document RAG under a collection-limited token with the collection left
out or another one named; an answer stream abandoned mid-way; a regular expression that
backtracks catastrophically elsewhere; and `sparqlrag mcp` on stdio fed hostile input. Each
refusal is a clear 4xx that leaves the store as it was."""

from __future__ import annotations

import io
import json
import os
import socket
import stat
import subprocess
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SPARQLRAG, LiveServer, start_server
from tests.llm_stub import Reply, serve_stub
from tests.security.conftest import sparql

ADMIN, READER, ALPHA = "admin", "reader", "alpha-reader"
RESULTS = {"Accept": "application/sparql-results+json"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    stub, stop_stub = serve_stub()
    stub.default = Reply("word " * 200, piece_delay=0.5)  # a streamed answer of ~100 s
    live, stop = start_server(
        tmp_path_factory.mktemp("limits"),
        write_tokens=[ADMIN],
        read_tokens=[READER],
        collection_tokens={ALPHA: ["read:alpha"]},
        header_timeout=2,
        max_header_bytes=16 * 1024,
        max_connections=40,
        answer_rate=0,
        llm="anthropic",
        llm_base_url=stub.url,
        llm_api_key="sk-test",
        llm_model="claude-test",
    )
    live.stub = stub  # type: ignore[attr-defined]
    with live.client(ADMIN) as admin:
        assert admin.post("/api/v1/collections", json={"name": "alpha"}).status_code == 201
        for collection in ("alpha", "default"):
            made = admin.post(
                f"/api/v1/documents?collection={collection}",
                json={"id": "d1", "text": f"Marie Curie was born in Warsaw. The {collection} notes say so."},
            )
            assert made.status_code == 201, made.text
    yield live
    stop()
    stop_stub()


def _raw(server: LiveServer, data: bytes, wait: float = 10) -> bytes:
    """What the server sends back on a raw connection after `data` (until it closes, or `wait` s)."""
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(data)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except TimeoutError:
            pass
    return answer


def test_a_request_head_too_large_is_431(server: LiveServer) -> None:
    long_line = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n"
    many = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n" + b"".join(b"X-%d: y\r\n" % n for n in range(5000)) + b"\r\n"
    for data in (long_line, many):
        answer = _raw(server, data)
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        assert b"request_head_too_large" in answer
    assert _raw(server, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").startswith(
        b"HTTP/1.1 200"
    )


def test_a_request_head_not_finished_in_time_is_408_and_closed(server: LiveServer) -> None:
    answer = _raw(server, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ", wait=30)  # the head never ends
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]


def test_connections_past_the_limit_close_the_longest_idle_and_unfinished_heads_are_dropped(
    server: LiveServer,
) -> None:
    """Connections holding nothing but an unfinished head do not keep a newcomer out (issue 51:
    they made every other request 503): past `max_connections` the longest-idle is closed."""
    host, port = server.url.removeprefix("http://").split(":")
    held = [socket.create_connection((host, int(port))) for _ in range(server.settings.max_connections + 5)]
    try:
        for sock in held:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")  # and never the end of the head
        answer = _raw(server, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
        ends = []
        for sock in held:  # each was closed to make room, or is answered 408 and closed at its head's deadline
            sock.settimeout(30)
            try:
                ends.append(sock.recv(100)[:13])
            except ConnectionResetError:
                ends.append(b"")
        assert set(ends) <= {b"", b"HTTP/1.1 408 "} and b"" in ends, ends
    finally:
        for sock in held:
            sock.close()
    assert _raw(server, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").startswith(
        b"HTTP/1.1 200"
    )


def _zip(members: dict[str, bytes], link: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as core:
        for name, data in members.items():
            core.writestr(name, data)
        if link is not None:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            core.writestr(info, "/etc/passwd")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("core", "says"),
    [
        (_zip({f"m{n}": b"" for n in range(1000)}), "1000 members"),
        (_zip({"manifest.json": b"{}", "../../escaped.trig": b"x"}), "a path or link as a member"),
        (_zip({"manifest.json": b"{}"}, link="graphs.trig"), "a path or link as a member"),
    ],
)
def test_cores_with_many_members_paths_or_links_are_refused(server: LiveServer, core: bytes, says: str) -> None:
    before = server.dataset(ADMIN)
    with server.client(ADMIN) as admin:
        refused = admin.post("/api/v1/collections/fresh/core", content=core)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_core", refused.text
    assert says in refused.json()["detail"]
    assert server.dataset(ADMIN) == before
    assert not (server.settings.data_dir.parent / "escaped.trig").exists()


@pytest.mark.parametrize("route", ["/api/v1/graph-rag", "/api/v1/document-rag"])
@pytest.mark.parametrize("collection", [None, "default", "nowhere"])
def test_answers_under_a_limited_token_stay_in_its_collections(
    server: LiveServer, route: str, collection: str | None
) -> None:
    before = server.dataset(ADMIN)
    body = {"question": "Where was Marie Curie born?"} | ({"collection": collection} if collection else {})
    with server.client(ALPHA) as client:
        refused = client.post(route, json=body)  # left out, the collection is `default`: not the token's
        assert refused.status_code == 403 and refused.json()["error"] == "forbidden", refused.text
        allowed = client.post(route, json={"question": "Where was Marie Curie born?", "collection": "alpha"})
        assert allowed.status_code == 200 and "alpha notes" in json.dumps(allowed.json()["sources"])
        assert "default notes" not in json.dumps(allowed.json())
    assert server.dataset(ADMIN).count("/trace/alpha/") > before.count("/trace/alpha/")  # only alpha's trace grew
    assert server.dataset(ADMIN).count("/trace/default/") == before.count("/trace/default/")


def _traces(server: LiveServer) -> int:
    with server.client(ADMIN) as admin:
        return len(admin.get("/api/v1/traces?collection=default").json()["traces"])


def test_an_answer_stream_abandoned_midway_leaves_nothing_behind(server: LiveServer) -> None:
    stub = server.stub  # type: ignore[attr-defined]
    traces = _traces(server)
    with server.client(READER) as client:
        with client.stream(
            "POST", "/api/v1/graph-rag", json={"question": "Where was Marie Curie born?", "stream": True}
        ) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line == "event: token":  # the model's answer has begun to flow: hang up
                    break
    assert stub.streams_open == 1 or stub.streams_open == 0
    deadline = time.monotonic() + 30  # the whole answer would take ~100 s
    while stub.streams_open and time.monotonic() < deadline:
        time.sleep(0.1)
    assert stub.streams_open == 0  # the server hung up on the model too
    assert _traces(server) == traces  # and wrote no trace of an answer nobody received


def test_a_backtracking_regular_expression_is_no_denial_of_service(server: LiveServer) -> None:
    text = "a" * 5000 + "!"
    update = sparql(server, ADMIN, "update", f'INSERT DATA {{ GRAPH <urn:regex> {{ <urn:s> <urn:p> "{text}" }} }}')
    assert update.status_code == 204
    asked = sparql(
        server,
        READER,
        "query",
        'SELECT ?o WHERE { GRAPH <urn:regex> { ?s ?p ?o FILTER(REGEX(?o, "^(a+)+$")) } }',
        timeout=5,
    )
    assert asked.status_code == 200 and asked.json()["results"]["bindings"] == []  # (a linear-time engine)
    sparql(server, ADMIN, "update", "DROP GRAPH <urn:regex>")


def test_mcp_on_stdio_takes_hostile_input_in_its_stride(tmp_path: Path) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }

    def call(n: int, tool: str, **arguments: str) -> str:
        return json.dumps(
            {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        )

    lines = [
        json.dumps(initialize),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        "not json",
        "[]",
        "{" * 10_000,
        "x" * (5 << 20),
        call(2, "sparql_query", query="SELECT * WHERE { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }"),
        call(3, "sparql_query", query="INSERT DATA { <urn:s> <urn:p> 1 }"),
        call(4, "describe_entity", entity="http://127.0.0.1:9/outside"),
        call(5, "list_collections"),
        json.dumps({"jsonrpc": "2.0", "id": 6, "method": "ping"}),
    ]
    environment = {**os.environ, "SPARQLRAG_READ_TOKENS": READER, "SPARQLRAG_TOKEN": READER}
    process = subprocess.Popen(
        [SPARQLRAG, "mcp", "--data-dir", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("\n".join(lines) + "\n")
    process.stdin.flush()
    answers: dict[int, dict] = {}
    while len(answers) < 6 and (line := process.stdout.readline()):  # every line is JSON-RPC
        message = json.loads(line)
        answers[message["id"]] = message
    _, errors = process.communicate(timeout=120)  # stdin closed: it stops
    assert process.returncode == 0 and "Traceback" not in errors
    assert set(answers) == {1, 2, 3, 4, 5, 6}
    for n, says in ((2, "remote_access_refused"), (3, "update_not_allowed"), (4, "not_found")):
        assert answers[n]["result"]["isError"] and says in answers[n]["result"]["content"][0]["text"]
    assert answers[5]["result"]["structuredContent"]["collections"][0]["name"] == "default"
    dumped = subprocess.run(
        [SPARQLRAG, "query", "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=120,
    )
    assert dumped.returncode == 0 and '"0"' in dumped.stdout.replace(" ", ""), dumped.stdout  # nothing was written
