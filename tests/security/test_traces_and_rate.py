"""A read token cannot grow the store without bound: traces are kept to their retention, and
answers are rate-limited per token."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sparqlrag.retrieval.trace import Retention, Trace, TraceLog
from sparqlrag.store import EmbeddedStore
from sparqlrag.store.select import select
from sparqlrag.store.vocab import SPARQL_PREFIXES, Iris
from tests.conftest import LiveServer, start_server
from tests.security.conftest import READ, WRITE, snapshot

KEEP, RATE = 5, 4


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[LiveServer]:
    """A server of the test's own: each token's allowance and the trace graph start fresh."""
    server, stop = start_server(
        tmp_path / "limited", write_tokens=[WRITE], read_tokens=[READ], trace_keep=KEEP, answer_rate=RATE
    )
    with server.client(WRITE) as client:
        response = client.post(
            "/api/v1/documents",
            params={"id": "w3c", "title": "W3C"},
            headers={"Content-Type": "text/plain"},
            content=b"The World Wide Web Consortium develops web standards. Tim Berners-Lee founded it in 1994.",
        )
        assert response.status_code in (200, 201), response.text
    yield server
    stop()


def ask(server: LiveServer, token: str) -> int:
    with server.client(token) as client:
        return client.post("/api/v1/document-rag", json={"question": "Who founded the W3C?"}).status_code


def trace_graph_counts(server: LiveServer) -> tuple[int, int]:
    """Traces in the default collection's trace graph, and blank nodes no trace holds any more."""
    graph = f"<{server.settings.base_iri}graph/default/trace>"
    store = server.store
    traces = select(store, SPARQL_PREFIXES + f"SELECT (COUNT(?t) AS ?n) {{ GRAPH {graph} {{ ?t a sr:Trace }} }}")
    orphans = select(
        store,
        f"SELECT (COUNT(*) AS ?n) {{ GRAPH {graph} {{ ?item ?p ?o FILTER(isBlank(?item)) "
        "FILTER NOT EXISTS { ?t ?link ?item } } }",
    )
    return int(traces[0]["n"]), int(orphans[0]["n"])


def test_answers_are_rate_limited_per_token(limited: LiveServer) -> None:
    assert [ask(limited, READ) for _ in range(RATE)] == [200] * RATE
    with limited.client(READ) as client:
        refused = client.post("/api/v1/document-rag", json={"question": "Who founded the W3C?"})
        graph_refused = client.post("/api/v1/graph-rag", json={"question": "Who founded the W3C?"})
    assert refused.status_code == 429 and graph_refused.status_code == 429
    assert refused.json()["error"] == "rate_limited" and 1 <= int(refused.headers["Retry-After"]) <= 60
    assert ask(limited, WRITE) == 200  # another token has its own allowance
    with limited.client(READ) as client:  # and reading the store is not limited
        assert client.get("/sparql", params={"query": "ASK {}"}).status_code == 200


def test_traces_are_kept_to_the_retention(limited: LiveServer) -> None:
    answers = [ask(limited, token) for token in (READ, WRITE) for _ in range(RATE)]  # each token's allowance
    assert answers == [200] * 2 * RATE and 2 * RATE > KEEP
    assert trace_graph_counts(limited) == (KEEP, 0)


def test_traces_older_than_the_retention_go(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")
    log, iris = TraceLog(store, Retention(keep=0, max_age=timedelta(days=1))), Iris("http://kb.example/", "default")
    try:
        old = Trace("an old question", "document-rag", started=datetime.now(UTC) - timedelta(days=3))
        asyncio.run(log.write(iris, old))  # pruned as it is written: older than a day
        asyncio.run(log.write(iris, Trace("a new question", "document-rag")))
        assert log._age_checked  # the check ran
        rows = select(
            store,
            SPARQL_PREFIXES + f"SELECT ?q {{ GRAPH {iris.trace_graph} {{ ?t sr:question ?q }} }}",
        )
        assert [row["q"] for row in rows] == ["a new question"]
    finally:
        store.close()


@pytest.mark.parametrize(
    ("path", "status", "error"),
    [
        ("/trace/nope/" + "0" * 32, 404, "collection_not_found"),
        ("/trace/a%20b/" + "0" * 32, 400, "bad_collection"),
        ("/trace/%3Cscript%3E/" + "0" * 32, 400, "bad_collection"),
        ("/trace/default/%3Cscript%3Ealert(1)", 404, "trace_not_found"),
        ("/trace/default/" + "0" * 33, 404, "trace_not_found"),
        ("/page/trace/default/%22%3E%3Cimg%20src%3Dx%3E", 404, "trace_not_found"),
        ("/page/trace/a%0A/" + "0" * 32, 400, "bad_collection"),
    ],
)
def test_hostile_trace_iris_are_4xx_and_redirect_nowhere(
    hostile: LiveServer, path: str, status: int, error: str
) -> None:
    """A trace IRI's collection and id come from the URL: a bad one is a 4xx naming the problem,
    never a redirect built from it, and the store is left as it was."""
    before = snapshot(hostile)
    with hostile.client(READ) as client:
        for accept in ("text/html", "application/json"):
            response = client.get(path, headers={"Accept": accept})
            assert (response.status_code, response.json()["error"]) == (status, error), response.text
            assert "location" not in response.headers and response.headers["content-type"] == "application/json"
    assert snapshot(hostile) == before
