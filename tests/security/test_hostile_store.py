"""A store of record that floods or trickles (issue 35, hole 5): with `--store-url` a query
ends at its total deadline however slowly the store answers (the server hangs up on the
store), an answer past its byte cap is refused with a clear error, the server's memory stays
bounded, and it goes on serving. How long each took is printed (`-s`); bench/hostile_store.py
prints the figures."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import LiveServer, start_server
from tests.hostile_store import LIMIT_SECONDS, HostileStore
from tests.oxigraph_server import Oxigraph, start_oxigraph
from tests.security.conftest import READ, WRITE

RESULTS = {"Accept": "application/sparql-results+json"}


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HostileStore, Oxigraph]]:
    upstream = start_oxigraph(tmp_path_factory.mktemp("oxigraph"))
    bad = HostileStore(upstream.url)
    yield bad, upstream
    bad.close()
    upstream.stop()


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, hostile_store: tuple[HostileStore, Oxigraph]
) -> Iterator[LiveServer]:
    bad, upstream = hostile_store
    live, stop = start_server(
        tmp_path_factory.mktemp("data"),
        write_tokens=[WRITE],
        read_tokens=[READ],
        store_url=bad.url + "/query",
        store_update_url=upstream.url + "/update",
        store_gsp_url=upstream.url + "/store",
        store_triple_terms=True,
    )
    yield live
    stop()


def _rss_bytes() -> int:
    """This process's resident memory now (the server runs in it)."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096


def _still_serving(server: LiveServer) -> None:
    with server.client(READ, timeout=10) as client:
        asked = client.get("/sparql", params={"query": "ASK {}"}, headers=RESULTS)
        assert asked.status_code == 200 and asked.json()["boolean"] is True
        assert client.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    ("marker", "status", "error"),
    [
        ("TRICKLE", 503, "query_timeout"),
        ("SLOWHEAD", 503, "query_timeout"),
    ],
)
def test_a_trickling_store_meets_the_deadline(
    server: LiveServer, hostile_store: tuple[HostileStore, Oxigraph], marker: str, status: int, error: str
) -> None:
    bad, _ = hostile_store
    before_answers = bad.bad_answers
    started = time.monotonic()
    with server.client(READ, timeout=60) as client:
        answered = client.get(
            "/sparql", params={"query": f"SELECT ?x WHERE {{ ?x ?p ?o }} # {marker}", "timeout": "5"}, headers=RESULTS
        )
    took = time.monotonic() - started
    assert bad.bad_answers == before_answers + 1  # the bad answer was really given
    # the server hung up on the store: the bad answer did not run to its own end (LIMIT_SECONDS)
    assert bad.hung_up.acquire(timeout=LIMIT_SECONDS - took)
    assert answered.status_code == status and answered.json()["error"] == error, answered.text
    assert "aaaa" not in answered.text  # nothing of the store's answer is shown
    _still_serving(server)


def test_a_flooding_store_is_passed_on_to_the_cap_and_then_cut(
    server: LiveServer, hostile_store: tuple[HostileStore, Oxigraph]
) -> None:
    """An endless answer (a store answering a cartesian product) streams to the client as any
    big answer does, until `max_result_bytes`: then the connection is cut, so the client never
    takes it for a whole answer; the server hangs up on the store and holds no more than pieces
    of it in memory."""
    bad, _ = hostile_store
    before_answers, before_rss = bad.bad_answers, _rss_bytes()
    started, received = time.monotonic(), 0
    with server.client(READ, timeout=60) as client, pytest.raises(httpx.RemoteProtocolError):
        query = {"query": "SELECT ?x WHERE { ?x ?p ?o } # FLOOD", "timeout": "30"}
        with client.stream("GET", "/sparql", params=query, headers=RESULTS) as answered:
            assert answered.status_code == 200
            for piece in answered.iter_bytes():
                received += len(piece)
    took = time.monotonic() - started
    print(f"FLOOD: {received >> 20} MB in {took:.1f} s, RSS {before_rss >> 20} -> {_rss_bytes() >> 20} MB")
    assert bad.bad_answers == before_answers + 1
    assert bad.hung_up.acquire(timeout=LIMIT_SECONDS - took)
    assert received <= server.settings.max_result_bytes + (1 << 20)  # the cap, and no more than a piece past it
    assert _rss_bytes() - before_rss < 256 << 20  # pieces, never the answer
    _still_serving(server)


def test_a_streamed_answer_that_stalls_is_cut_at_its_deadline(
    server: LiveServer, hostile_store: tuple[HostileStore, Oxigraph]
) -> None:
    """A store's answer that has begun streaming to the client and then stalls still ends at the
    query's deadline in all: the client's connection is cut, the server hangs up on the store."""
    bad, _ = hostile_store
    before = bad.bad_answers
    started = time.monotonic()
    with server.client(READ, timeout=60) as client, pytest.raises(httpx.RemoteProtocolError):
        query = {"query": "SELECT ?x WHERE { ?x ?p ?o } # STALL", "timeout": "4"}
        with client.stream("GET", "/sparql", params=query, headers=RESULTS) as answered:
            assert answered.status_code == 200  # about 3 MB came at once: the answer was streaming
            for _ in answered.iter_bytes():
                pass
    took = time.monotonic() - started
    assert bad.bad_answers == before + 1
    assert took < 15  # the deadline (4 s), not the store's drip (LIMIT_SECONDS)
    assert bad.hung_up.acquire(timeout=LIMIT_SECONDS - took)
    _still_serving(server)


def test_a_client_that_hangs_up_stops_its_request_to_the_store(
    server: LiveServer, hostile_store: tuple[HostileStore, Oxigraph]
) -> None:
    bad, _ = hostile_store
    before = bad.bad_answers
    with server.client(READ, timeout=1) as client, pytest.raises(httpx.ReadTimeout):
        client.get("/sparql", params={"query": "ASK { ?s ?p ?o } # HOLD", "timeout": "50"}, headers=RESULTS)
    assert bad.bad_answers == before + 1
    # the server hung up on the store well before the query's 50 s deadline
    assert bad.hung_up.acquire(timeout=40)
    _still_serving(server)
