"""Who a client is (issue 51, hole 1): every per-client limit keys on one identity, the verified
token however its header is spelt (or the same token from the cookie), else the socket's peer.
A respelt header, a made-up token or an `X-Forwarded-For` is no new client; an unknown token is
401 before any limit counts it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from sparqlrag.config import Settings
from sparqlrag.server.auth import token_cookie
from sparqlrag.server.http_protocol import uvicorn_config
from tests.conftest import LiveServer, start_server

READER, ADMIN = "reader", "admin"
RESULTS = {"Accept": "application/sparql-results+json"}
CARTESIAN = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"  # runs until its timeout
TRIPLES = "".join(f'<http://e/s{i}> <http://e/p> "{i}" .\n' for i in range(2000))


def _seeded(server: LiveServer, token: str | None) -> None:
    with server.client(token) as client:
        loaded = client.post("/store?default", content=TRIPLES, headers={"Content-Type": "application/n-triples"})
        assert loaded.status_code in (200, 201, 204), loaded.text


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """Tokens; one query at a time per client, two answers a minute."""
    server, stop = start_server(
        tmp_path_factory.mktemp("identity"),
        write_tokens=[ADMIN],
        read_tokens=[READER],
        max_concurrent_queries=1,
        answer_rate=2,
    )
    _seeded(server, ADMIN)
    yield server
    stop()


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """No tokens (the loopback set-up): one query at a time per client."""
    server, stop = start_server(tmp_path_factory.mktemp("identity-open"), max_concurrent_queries=1, answer_rate=2)
    _seeded(server, None)
    yield server
    stop()


def _while_slow(server: LiveServer, headers: dict[str, str], then: Callable[[], httpx.Response]) -> httpx.Response:
    """`then`'s answer, asked while a slow query sent with `headers` runs (retried until the
    slow one has started and been admitted, which takes a moment)."""
    done = threading.Event()

    def slow() -> None:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            client.get("/sparql", params={"query": CARTESIAN, "timeout": "3"}, headers={**RESULTS, **headers})
        done.set()

    threading.Thread(target=slow, daemon=True).start()
    time.sleep(0.3)
    answer = then()
    while answer.status_code == 200 and not done.is_set():  # (asked before the slow one was admitted)
        time.sleep(0.2)
        answer = then()
    assert not done.is_set(), "the slow query ended before the second was asked"
    done.wait(60)
    return answer


def _ask(server: LiveServer, headers: dict[str, str], cookies: dict[str, str] | None = None) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=60, cookies=cookies) as client:
        return client.get("/sparql", params={"query": "ASK {}"}, headers={**RESULTS, **headers})


@pytest.mark.parametrize("spelling", ["bearer reader", "Bearer   reader", "BEARER\treader", "cookie"])
def test_a_token_respelt_or_from_the_cookie_is_the_same_client(guarded: LiveServer, spelling: str) -> None:
    cookies = {token_cookie(guarded.settings): READER} if spelling == "cookie" else None
    headers = {} if spelling == "cookie" else {"Authorization": spelling}
    second = _while_slow(guarded, {"Authorization": "Bearer reader"}, lambda: _ask(guarded, headers, cookies))
    assert second.status_code == 429 and second.json()["error"] == "too_many_queries", second.text
    other = _ask(guarded, {"Authorization": f"Bearer {ADMIN}"})  # another client is served meanwhile
    assert other.status_code == 200, other.text


def test_the_answer_rate_counts_a_token_however_it_is_spelt(guarded: LiveServer) -> None:
    statuses = []
    for spelling in ("Bearer admin", "bearer admin", "Bearer  admin", "BEARER admin"):
        with httpx.Client(base_url=guarded.url, timeout=60, headers={"Authorization": spelling}) as client:
            statuses.append(client.post("/api/v1/document-rag", json={"question": "what is s1?"}).status_code)
    assert 429 not in statuses[:2] and statuses[2:] == [429, 429], statuses


def test_an_unknown_token_is_refused_before_any_limit(guarded: LiveServer) -> None:
    for attempt in range(5):  # more than the answer rate: each is 401, none is 429
        with httpx.Client(base_url=guarded.url, timeout=60, headers={"Authorization": f"Bearer x{attempt}"}) as client:
            assert client.post("/api/v1/document-rag", json={"question": "q"}).status_code == 401


@pytest.mark.parametrize(
    "headers",
    [{"X-Forwarded-For": "203.0.113.9"}, {"Authorization": "Bearer made-up"}, {"Authorization": "Basic eDp5"}],
)
def test_without_tokens_the_client_is_the_sockets_peer(open_server: LiveServer, headers: dict[str, str]) -> None:
    second = _while_slow(open_server, {}, lambda: _ask(open_server, headers))
    assert second.status_code == 429 and second.json()["error"] == "too_many_queries", second.text


def test_forwarded_for_is_read_only_from_a_trusted_proxy() -> None:
    assert uvicorn_config(object(), Settings()).proxy_headers is False
    trusting = uvicorn_config(object(), Settings(trusted_proxies="10.0.0.1, 192.168.0.0/16"))
    assert trusting.proxy_headers is True and trusting.forwarded_allow_ips == ["10.0.0.1", "192.168.0.0/16"]
    with pytest.raises(ValueError, match="trusted proxy"):
        Settings(trusted_proxies=["not-an-address"])
