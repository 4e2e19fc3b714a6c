"""Hostile input to the entity-curation routes (`/api/v1/collections/{name}/entities/...`):
IRIs of other hosts, strings that are no IRI, SPARQL and markup in names, bodies of the wrong
shape. Each gets a 4xx naming the problem, the store stays as it was, and nothing is contacted."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import LiveServer
from tests.security.conftest import READ, WRITE, Listener, snapshot, still_serving

ROUTE = "/api/v1/collections/default/entities/"


@pytest.fixture(scope="module")
def with_w3c(hostile: LiveServer) -> LiveServer:
    with hostile.client(WRITE) as client:
        text = "The World Wide Web Consortium (W3C) is a standards body. The W3C published SPARQL."
        assert client.post("/api/v1/documents", json={"id": "w3c-curation", "text": text}).status_code in (200, 201)
    return hostile


def cases(server: LiveServer, listener: Listener) -> list[tuple[str, str, dict[str, Any], int, str]]:
    base = server.settings.base_iri
    return [
        ("POST", "merge", {"json": {"entity": listener.url("id/default/w3c"), "other": "W3C"}}, 404, "unknown_entity"),
        ("POST", "merge", {"json": {"entity": f"{base}id/default/a b>", "other": "W3C"}}, 404, "unknown_entity"),
        ("POST", "split", {"json": {"entity": '"} } ; DROP ALL ; #', "alias": "W3C"}}, 404, "unknown_entity"),
        ("POST", "split", {"json": {"entity": "W3C", "alias": "<script>alert(1)</script>"}}, 404, "unknown_entity"),
        ("GET", "aliases", {"params": {"entity": "?x ?p ?o } UNION { ?s ?p"}}, 404, "unknown_entity"),
        ("GET", "aliases", {"params": {"entity": f"{base}id/default/%00"}}, 404, "unknown_entity"),
        ("POST", "merge", {"json": ["W3C", "SPARQL"]}, 400, "bad_request"),
        ("POST", "merge", {"content": b"entity=W3C&other=SPARQL"}, 400, "bad_request"),
        ("POST", "split", {"json": {"entity": 7, "alias": None}}, 400, "bad_request"),
        ("POST", "merge", {"json": {"entity": "W3C", "other": "W3C"}}, 409, "curation_refused"),
    ]


@pytest.mark.parametrize("case", range(10))
def test_hostile_curation_gets_a_4xx_and_changes_nothing(with_w3c: LiveServer, listener: Listener, case: int) -> None:
    method, route, kwargs, status, error = cases(with_w3c, listener)[case]
    before = snapshot(with_w3c)
    with with_w3c.client(WRITE) as client:
        response = client.request(method, ROUTE + route, **kwargs)
    assert (response.status_code, response.json()["error"]) == (status, error), response.text
    assert "Traceback" not in response.text and "pyoxigraph" not in response.text
    assert snapshot(with_w3c) == before
    assert listener.contacts == []
    still_serving(with_w3c)


def test_a_bad_collection_or_a_read_token_changes_nothing(with_w3c: LiveServer) -> None:
    before = snapshot(with_w3c)
    with with_w3c.client(WRITE) as client:
        bad = client.get("/api/v1/collections/Not%20Valid/entities/aliases", params={"entity": "W3C"})
        assert (bad.status_code, bad.json()["error"]) == (400, "bad_collection")
    with with_w3c.client(READ) as client:
        for route, body in (
            ("merge", {"entity": "W3C", "other": "SPARQL"}),
            ("split", {"entity": "W3C", "alias": "W3C"}),
        ):
            assert client.post(ROUTE + route, json=body).status_code == 403
        assert (
            client.get(ROUTE + "aliases", params={"entity": "W3C"}).status_code == 200
        )  # reading needs a read token only
    assert snapshot(with_w3c) == before
