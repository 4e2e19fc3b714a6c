"""Query answers stream: a big result leaves the store in pieces as it is written, so neither
process ever holds it whole; a small one is answered whole. What happens when a stream cannot
be finished (the byte cap, a deadline, a client that hangs up) is checked here on a real
server whose store has one thread for clients' queries: a stream that left its connection
stuck would make every later query wait."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyoxigraph import RdfFormat, parse

from tests.conftest import LiveServer, restarted, start_server

SUBJECTS = 2000
CAP = 16 << 20  # max_result_bytes of this module's server
QUERY = "application/sparql-query"


def pairs(rows: int) -> str:
    """A cross product of the seeded subjects: `rows` rows of two IRIs, from 2,000 triples."""
    return f"SELECT ?a ?b WHERE {{ ?a <http://e/p> ?x . ?b <http://e/p> ?y }} LIMIT {rows}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    started, stop = start_server(tmp_path_factory.mktemp("data"), store_threads=1, max_result_bytes=CAP)
    triples = " ".join(f'<http://e/s{i}> <http://e/p> "{i}" .' for i in range(SUBJECTS))
    with started.client() as client:
        update = {"Content-Type": "application/sparql-update"}
        response = client.post("/sparql", content=f"INSERT DATA {{ {triples} }}", headers=update)
        assert response.status_code == 204, response.text
    yield started
    stop()


def still_serving(server: LiveServer) -> None:
    """The one client connection of the store answers a query again, promptly."""
    with server.client() as client:
        response = client.post("/sparql", content="ASK { ?s ?p ?o }", headers={"Content-Type": QUERY}, timeout=20)
    assert response.status_code == 200 and response.json()["boolean"] is True


def test_a_small_answer_is_whole_and_a_big_one_streams_complete_in_every_format(server: LiveServer) -> None:
    with server.client() as client:
        small = client.post("/sparql", content=pairs(10), headers={"Content-Type": QUERY})
        assert small.status_code == 200 and small.headers["content-length"] == str(len(small.content))
        for accept in ("application/sparql-results+json", "application/sparql-results+xml", "text/csv"):
            big = client.post("/sparql", content=pairs(40_000), headers={"Content-Type": QUERY, "Accept": accept})
            assert big.status_code == 200, big.text
            assert "content-length" not in big.headers and big.headers["transfer-encoding"] == "chunked"
            if accept.endswith("json"):
                assert len(big.json()["results"]["bindings"]) == 40_000
            elif accept.endswith("xml"):
                assert big.text.count("<result>") == 40_000 and big.text.rstrip().endswith("</sparql>")
            else:
                assert len(list(csv.reader(io.StringIO(big.text)))) == 40_001  # and the header
        construct = "CONSTRUCT { ?a <http://e/q> ?b } WHERE { ?a <http://e/p> ?x . ?b <http://e/p> ?y } LIMIT 30000"
        graph = client.post("/sparql", content=construct, headers={"Content-Type": QUERY, "Accept": "text/turtle"})
        assert graph.status_code == 200 and "content-length" not in graph.headers
        assert len(list(parse(graph.content, RdfFormat.TURTLE))) == 30_000


def test_an_answer_passing_the_byte_cap_midway_is_cut_never_completed(server: LiveServer) -> None:
    """Over the cap before its first piece left, an answer is a clear 400 (security tests); past
    it, the status is out: the connection is cut, so no client takes a short answer for a whole one."""
    with server.client() as client, pytest.raises(httpx.RemoteProtocolError):
        client.post("/sparql", content=pairs(400_000), headers={"Content-Type": QUERY})  # about 36 MB
    still_serving(server)


def test_a_client_that_hangs_up_midway_frees_the_store_without_a_restart(server: LiveServer) -> None:
    restarts = server.store.restarts
    with server.client() as client:
        with client.stream("POST", "/sparql", content=pairs(150_000), headers={"Content-Type": QUERY}) as response:
            assert response.status_code == 200
            next(response.iter_bytes())  # the answer flows; then the client goes
    still_serving(server)
    assert server.store.restarts == restarts


def test_a_stream_read_too_slowly_ends_at_its_deadline(server: LiveServer) -> None:
    """A slow reader holds the query back (the store waits to send), and the query's deadline
    still holds: the answer is cut then, and the store freed for others."""
    restarts = server.store.restarts
    with server.client() as client, pytest.raises(httpx.RemoteProtocolError):
        with client.stream(
            "POST", "/sparql?timeout=1.5", content=pairs(150_000), headers={"Content-Type": QUERY}
        ) as response:
            assert response.status_code == 200
            pieces = response.iter_bytes()
            next(pieces)
            time.sleep(3)
            for _ in pieces:
                pass
    assert restarted(server.store, restarts + 1)
    still_serving(server)


def test_json_pieces_join_into_one_document(server: LiveServer, tmp_path: Path) -> None:
    """What a client saves piece by piece is one document, as if the answer had been whole."""
    target = tmp_path / "answer.json"
    with server.client() as client, target.open("wb") as out:
        with client.stream("POST", "/sparql", content=pairs(30_000), headers={"Content-Type": QUERY}) as response:
            for piece in response.iter_bytes():
                out.write(piece)
    rows = json.loads(target.read_bytes())["results"]["bindings"]
    assert len(rows) == 30_000 and {"a", "b"} <= rows[0].keys()


def test_a_big_graph_streams_through_the_graph_store_protocol(server: LiveServer) -> None:
    graph = "http://e/big"
    triples = "".join(
        f'<http://e/t{i}> <http://e/label> "a label long enough to add up {i}" .\n' for i in range(30_000)
    )
    with server.client() as client:
        put = client.put("/store", params={"graph": graph}, content=triples, headers={"Content-Type": "text/turtle"})
        assert put.status_code in (201, 204), put.text
        got = client.get("/store", params={"graph": graph}, headers={"Accept": "application/n-triples"})
        assert got.status_code == 200 and "content-length" not in got.headers
        assert sorted(got.text.splitlines()) == sorted(triples.splitlines())
        missing = client.get("/store", params={"graph": "http://e/none"}, headers={"Accept": "text/turtle"})
        assert missing.status_code == 404
        assert client.delete("/store", params={"graph": graph}).status_code == 204
