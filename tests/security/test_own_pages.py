"""Writes only from our own pages (issue 51, hole 4): a server without tokens obeys no write a
page of another site makes a browser send (a form, an upload, another port of the same host),
answers no write preflight with a wildcard, and answers only to its own host names (DNS
rebinding); a write token never rides in a cookie. The headers are what Chromium sends."""

from __future__ import annotations

import httpx
import pytest

from sparqlrag.server.auth import token_cookie
from tests.conftest import LiveServer
from tests.security.conftest import READ, WRITE

FOREIGN = {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}


def _quads(server: LiveServer) -> str:
    return server.dataset()


@pytest.fixture
def seeded(live_server: LiveServer) -> LiveServer:
    with live_server.client() as client:  # (a client that is not a browser: no Origin)
        loaded = client.post(
            "/store?default", content='<http://e/s> <http://e/p> "o" .\n', headers={"Content-Type": "text/turtle"}
        )
        assert loaded.status_code in (201, 204), loaded.text
    return live_server


@pytest.mark.parametrize(
    "headers",
    [
        FOREIGN,
        {"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"},  # another port of the same host
        {"Origin": "http://evil.example"},  # a browser that sends no Sec-Fetch-Site
        {"Origin": "null", "Sec-Fetch-Site": "cross-site"},  # a sandboxed frame
    ],
)
def test_a_foreign_pages_writes_are_refused(seeded: LiveServer, headers: dict[str, str]) -> None:
    before = _quads(seeded)
    with httpx.Client(base_url=seeded.url, headers=headers) as browser:
        form = browser.post("/sparql", data={"update": "DROP ALL"})
        upload = browser.post("/api/v1/documents", files=[("file", ("x.txt", b"Eve was here.", "text/plain"))])
        deleted = browser.delete("/store?default")
        assistant = browser.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    for refused in (form, upload, deleted, assistant):
        assert refused.status_code == 403 and refused.json()["error"] == "cross_site_write", refused.text
    assert _quads(seeded) == before
    with httpx.Client(base_url=seeded.url, headers=headers) as browser:  # reads stay open to any page, as before
        assert browser.post("/sparql", data={"query": "ASK {}"}).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [{}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}, {"Origin": "own"}],
)
def test_our_own_pages_and_clients_that_are_not_browsers_write(seeded: LiveServer, headers: dict[str, str]) -> None:
    if headers.get("Origin") == "own":
        headers = {"Origin": seeded.url}
    with httpx.Client(base_url=seeded.url, headers=headers) as client:
        written = client.post("/sparql", data={"update": "INSERT DATA { <http://e/a> <http://e/b> 1 }"})
    assert written.status_code == 204, written.text


def test_no_wildcard_preflight_for_writes(live_server: LiveServer) -> None:
    with live_server.client() as client:
        for method in ("DELETE", "PUT"):
            preflight = client.options(
                "/store", headers={"Origin": "http://evil.example", "Access-Control-Request-Method": method}
            )
            assert preflight.headers.get("access-control-allow-origin") is None, (method, preflight.headers)
        reading = client.options(
            "/sparql", headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "GET"}
        )
        assert reading.headers.get("access-control-allow-origin") == "*"


@pytest.mark.parametrize("host", ["evil.example", "evil.example:7878", "attacker.test:80"])
def test_a_request_for_another_host_name_is_refused(live_server: LiveServer, host: str) -> None:
    with live_server.client() as client:
        refused = client.get("/sparql", params={"query": "ASK {}"}, headers={"Host": host})
    assert refused.status_code == 421 and refused.json()["error"] == "host_not_allowed", refused.text
    assert "allowed_hosts" in refused.json()["detail"]


@pytest.mark.parametrize("host", ["localhost:7878", "127.0.0.1", "[::1]:80", "LOCALHOST"])
def test_loopback_names_are_answered(live_server: LiveServer, host: str) -> None:
    with live_server.client() as client:
        answered = client.get("/sparql", params={"query": "ASK {}"}, headers={"Host": host})
    assert answered.status_code == 200, answered.text


def test_a_write_token_in_a_cookie_is_ignored(hostile: LiveServer) -> None:
    cookie = token_cookie(hostile.settings)
    with httpx.Client(base_url=hostile.url, cookies={cookie: WRITE}) as browser:
        assert browser.get("/api/v1/collections").status_code == 401
    with httpx.Client(base_url=hostile.url, cookies={cookie: READ}) as browser:
        assert browser.get("/api/v1/collections").status_code == 200


def test_the_pages_learn_what_a_token_may_do(hostile: LiveServer, live_server: LiveServer) -> None:
    with hostile.client(READ) as reader, hostile.client(WRITE) as writer:
        assert reader.get("/api/v1/access").json() == {"auth": True, "reads": "all", "writes": []}
        assert writer.get("/api/v1/access").json() == {"auth": True, "reads": "all", "writes": "all"}
    with hostile.client("unknown") as stranger:
        assert stranger.get("/api/v1/access").status_code == 401
    with live_server.client() as anyone:
        assert anyone.get("/api/v1/access").json() == {"auth": False}
