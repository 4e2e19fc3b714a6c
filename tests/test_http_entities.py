"""Entity resolution over real HTTP: an alias's `/id/` answers 303 to its entity's page, and
the curation routes (aliases with read scope; merge and split with write scope)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import LiveServer, start_server

READ, WRITE = "reader-token", "writer-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live, stop = start_server(
        tmp_path_factory.mktemp("entities"), own_base_iri=True, read_tokens=[READ], write_tokens=[WRITE]
    )
    yield live
    stop()


@pytest.fixture(scope="module")
def writer(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(WRITE) as client:
        text = "The World Wide Web Consortium (W3C) is a standards body. The W3C published SPARQL in 2008."
        assert client.post("/api/v1/documents", json={"id": "w3c", "text": text}).status_code == 201
        yield client


def test_an_alias_iri_answers_303_to_its_entity(server: LiveServer, writer: httpx.Client) -> None:
    html = writer.get("/id/default/w3c", headers={"Accept": "text/html"})
    assert html.status_code == 303 and html.headers["location"] == "../../page/id/default/world-wide-web-consortium"
    turtle = writer.get("/id/default/w3c", headers={"Accept": "text/turtle"})
    assert turtle.headers["location"] == "../../data/id/default/world-wide-web-consortium.ttl"
    page = writer.get("/page/id/default/world-wide-web-consortium")
    assert page.status_code == 200 and "W3C" in page.text  # the page lists the aliases
    assert (
        writer.get("/id/default/world-wide-web-consortium", headers={"Accept": "text/html"}).headers["location"]
        == "../../page/id/default/world-wide-web-consortium"
    )


def test_aliases_then_split_then_merge(server: LiveServer, writer: httpx.Client) -> None:
    with server.client(READ) as reader:
        shown = reader.get("/api/v1/collections/default/entities/aliases", params={"entity": "W3C"})
        assert shown.status_code == 200, shown.text
        assert [(m["alias"], m["rule"], m["documents"]) for m in shown.json()["merges"]] == [
            ("W3C", "acronym", ["w3c"])
        ]
        refused = reader.post("/api/v1/collections/default/entities/split", json={"entity": "W3C", "alias": "W3C"})
        assert refused.status_code == 403  # a read token curates nothing
    entity = shown.json()["entity"]
    split = writer.post("/api/v1/collections/default/entities/split", json={"entity": entity, "alias": "W3C"})
    assert split.status_code == 200 and split.json()["kept_apart"] == ["W3C"] and split.json()["merges"] == []
    assert (
        writer.get("/id/default/w3c", headers={"Accept": "text/html"}).headers["location"]
        == "../../page/id/default/w3c"
    )
    merged = writer.post("/api/v1/collections/default/entities/merge", json={"entity": entity, "other": "W3C"})
    assert merged.status_code == 200 and ("W3C", "curated") in {
        (m["alias"], m["rule"]) for m in merged.json()["merges"]
    }


@pytest.mark.parametrize(
    ("method", "route", "body", "status", "error"),
    [
        ("post", "merge", {"entity": "W3C"}, 400, "bad_request"),
        ("post", "split", {"entity": "", "alias": "W3C"}, 400, "bad_request"),
        ("post", "merge", {"entity": "SPARQL", "other": "Nobody Known"}, 404, "unknown_entity"),
        ("post", "split", {"entity": "SPARQL", "alias": "W3C"}, 404, "unknown_entity"),
        ("post", "merge", {"entity": "SPARQL", "other": "SPARQL"}, 409, "curation_refused"),
        ("get", "aliases", None, 400, "bad_request"),
        ("get", "aliases?entity=%C2%A0", None, 400, "bad_request"),  # schemathesis: a no-break space alone
        ("post", "merge", {"entity": "SPARQL", "other": "W3C", "extra": 1}, 400, "bad_request"),
        ("get", "aliases?entity=x&collection=y", None, 404, "unknown_entity"),
    ],
)
def test_bad_curation_requests_are_4xx_and_change_nothing(
    writer: httpx.Client, method: str, route: str, body: dict | None, status: int, error: str
) -> None:
    before = writer.get("/store", headers={"Accept": "application/n-quads"}).text
    response = writer.request(method.upper(), f"/api/v1/collections/default/entities/{route}", json=body)
    assert (response.status_code, response.json()["error"]) == (status, error), response.text
    assert "Traceback" not in response.text
    assert writer.get("/store", headers={"Accept": "application/n-quads"}).text == before
    unknown = writer.get("/api/v1/collections/nowhere/entities/aliases", params={"entity": "W3C"})
    assert unknown.status_code == 404 and unknown.json()["error"] == "collection_not_found"
