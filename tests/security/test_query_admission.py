"""One client's slow queries cannot starve the store (issue 35, hole 4): a client may run
`max_concurrent_queries` queries at once (one more is 429 with Retry-After); while they run,
another client's query, the server's own calls (a question answered) and /healthz are answered;
a client whose queries keep stopping the store is refused for a while; a result over
max_result_bytes is a clear 400. The figures (how fast those answers come) are
bench/starvation.py's; these tests check what happens and in what order."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import LiveServer, start_server
from tests.security.conftest import sparql

ADMIN, SLOW, OTHER, CRASHER = "admin", "slow-reader", "other-reader", "crashing-reader"
RESULTS = {"Accept": "application/sparql-results+json"}
CARTESIAN = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"  # runs for minutes
DEEP = "SELECT * WHERE " + "{" * 10_000 + "}" * 10_000  # nests too deeply: it stops the store process


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live, stop = start_server(
        tmp_path_factory.mktemp("admission"),
        write_tokens=[ADMIN],
        read_tokens=[SLOW, OTHER, CRASHER],
        max_concurrent_queries=2,
        query_crash_budget=2,
        max_result_bytes=64 * 1024,
        answer_rate=0,
    )
    triples = "".join(f'<http://e/s{i}> <http://e/p> "{i}" .\n' for i in range(2000))
    with live.client(ADMIN) as admin:
        loaded = admin.post("/store?default", content=triples, headers={"Content-Type": "application/n-triples"})
        assert loaded.status_code in (200, 201, 204), loaded.text
        made = admin.post("/api/v1/documents", json={"id": "d1", "text": "Marie Curie was born in Warsaw."})
        assert made.status_code == 201, made.text
    yield live
    stop()


def _marie_curie(server: LiveServer) -> str:
    return f"{server.settings.base_iri}id/default/marie-curie"


def _ask(server: LiveServer, token: str, query: str = "ASK {}", **params: str) -> httpx.Response:
    with server.client(token, timeout=120) as client:
        return client.get("/sparql", params={"query": query, **params}, headers=RESULTS)


def test_a_clients_slow_queries_leave_everyone_else_served(server: LiveServer) -> None:
    finished: list[tuple[str, int]] = []  # (what, status), in the order the answers came

    def slow() -> None:
        answer = _ask(server, SLOW, CARTESIAN, timeout="8")
        while answer.status_code == 429:  # one of the ASKs below held a slot for a moment
            answer = _ask(server, SLOW, CARTESIAN, timeout="8")
        finished.append(("slow", answer.status_code))

    threads = [threading.Thread(target=slow) for _ in range(2)]
    for thread in threads:
        thread.start()
    # once both run, the same client's next query is refused at once, with a hint when to come back
    third = _ask(server, SLOW)
    for _ in range(1000):  # (an ASK asked before both had started is answered)
        if third.status_code != 200 or len(finished) == 2:
            break
        third = _ask(server, SLOW)
    assert third.status_code == 429 and third.json()["error"] == "too_many_queries", (third.text, finished)
    assert third.headers["Retry-After"] == "1"
    with server.client(SLOW, timeout=120) as client:  # the explorer's graph is one of its queries too
        drawn = client.get("/api/v1/collections/default/graph", params={"entity": _marie_curie(server)})
        assert drawn.status_code == 429 and drawn.json()["error"] == "too_many_queries", drawn.text
    with server.client(OTHER, timeout=120) as client:
        drawn = client.get("/api/v1/collections/default/graph", params={"entity": _marie_curie(server)})
        assert drawn.status_code == 200 and drawn.json()["nodes"][0]["label"] == "Marie Curie", drawn.text
    # another client's query, the server's own calls and /healthz are answered meanwhile
    other = _ask(server, OTHER)
    assert other.status_code == 200 and other.json()["boolean"] is True
    finished.append(("other", other.status_code))
    with server.client(OTHER, timeout=120) as client:
        asked = client.post("/api/v1/graph-rag", json={"question": "Where was Marie Curie born?"})
        assert asked.status_code == 200, asked.text
        finished.append(("graph-rag", asked.status_code))
        assert client.get("/healthz").status_code == 200
        finished.append(("healthz", 200))
    for thread in threads:
        thread.join()
    assert [what for what, _ in finished][:3] == ["other", "graph-rag", "healthz"]  # before either slow one
    assert [status for what, status in finished if what == "slow"] == [503, 503]  # stopped at their deadline
    assert _ask(server, SLOW).status_code == 200  # and the client may query again


def test_a_client_that_keeps_stopping_the_store_is_refused_for_a_while(server: LiveServer) -> None:
    # each distinct text stops the store once; the same text again is refused outright (no restart, not counted)
    for text in (f"# 0\n{DEEP}", f"# 0\n{DEEP}", f"# 1\n{DEEP}"):
        crashed = sparql(server, CRASHER, "query", text)
        assert crashed.status_code == 400 and crashed.json()["error"] == "query_crashed_store", crashed.text
    refused = _ask(server, CRASHER)
    assert refused.status_code == 429 and refused.json()["error"] == "too_many_crashes", refused.text
    assert int(refused.headers["Retry-After"]) > 0
    assert _ask(server, OTHER).status_code == 200  # other clients are not held to it


def test_a_result_over_the_limit_is_a_clear_400(server: LiveServer) -> None:
    big = _ask(server, OTHER, "SELECT * WHERE { ?s ?p ?o }")
    assert big.status_code == 400, big.text
    body = big.json()
    assert body["error"] == "result_too_large" and "65,536 byte limit" in body["detail"]
    assert _ask(server, OTHER, "SELECT * WHERE { ?s ?p ?o } LIMIT 10").status_code == 200
    json.dumps(body)  # a JSON error, not a cut-off result
