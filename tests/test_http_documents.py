"""`/api/v1/documents` and `/api/v1/document-rag` over real HTTP."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import LiveServer, start_server
from tests.test_decoders_chunker import minimal_pdf


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live, stop = start_server(tmp_path_factory.mktemp("docs"), max_upload_bytes=20_000)
    yield live
    stop()


def snapshot(client: httpx.Client) -> list[str]:
    return sorted(client.get("/store", headers={"Accept": "application/n-quads"}).text.splitlines())


def test_upload_list_status_delete(client: httpx.Client) -> None:
    created = client.post(
        "/api/v1/documents", json={"id": "curie", "title": "Curie", "text": "Marie Curie was born in Warsaw."}
    )
    assert created.status_code == 201, created.text
    (item,) = created.json()["documents"]
    assert (item["id"], item["status"], item["chunks_added"]) == ("curie", "ready", 1)
    assert (
        client.post(
            "/api/v1/documents", json={"id": "curie", "title": "Curie", "text": "Marie Curie was born in Warsaw."}
        ).status_code
        == 200
    )
    files = [
        ("file", ("eiffel.md", b"# Eiffel\n\nThe Eiffel Tower is in Paris.", "text/markdown")),
        ("file", ("doc.pdf", minimal_pdf("Bread is baked from flour."), "application/pdf")),
    ]
    multi = client.post("/api/v1/documents", files=files)
    assert multi.status_code == 201 and [d["status"] for d in multi.json()["documents"]] == ["ready", "ready"]
    raw = client.post(
        "/api/v1/documents?id=notes/raw.txt&title=Raw",
        content=b"Oslo is in Norway.",
        headers={"Content-Type": "text/plain"},
    )
    assert raw.status_code == 201
    listing = client.get("/api/v1/documents").json()["documents"]
    assert {d["id"] for d in listing} >= {"curie", "eiffel.md", "doc.pdf", "notes/raw.txt"}
    status = client.get("/api/v1/documents/notes/raw.txt").json()
    assert (status["title"], status["status"], status["progress"]) == ("Raw", "ready", 1.0)
    assert client.delete("/api/v1/documents/notes/raw.txt").status_code == 204
    gone = client.get("/api/v1/documents/notes/raw.txt")
    assert gone.status_code == 404 and gone.json()["error"] == "document_not_found"
    assert client.delete("/api/v1/documents/notes/raw.txt").status_code == 404


@pytest.mark.parametrize(
    "kwargs,status,error",
    [
        ({"json": {"id": "e", "text": ""}}, 400, "bad_document"),
        ({"files": {"file": ("foaf.ttl", b"<http://a> <http://b> <http://c> .", "text/plain")}}, 400, "bad_document"),
        (
            {
                "content": b"\x00\x01binary\x00" * 40,
                "headers": {"Content-Type": "text/plain"},
                "params": {"id": "junk"},
            },
            400,
            "bad_document",
        ),
        (
            {"content": b"not a pdf", "headers": {"Content-Type": "application/pdf"}, "params": {"id": "fake.pdf"}},
            400,
            "bad_document",
        ),
        (
            {"content": b"x" * 30_000, "headers": {"Content-Type": "text/plain"}, "params": {"id": "huge"}},
            413,
            "body_too_large",
        ),
        ({"json": {"id": "x", "text": "fine"}, "params": {"collection": "Not Valid"}}, 400, "bad_collection"),
        ({"json": {"id": "x", "text": "fine"}, "params": {"collection": "never-created"}}, 404, "collection_not_found"),
        (
            {
                "json": {"id": "x", "text": "fine"},
                "params": {"collection": "never-created"},
                "headers": {"Prefer": "respond-async"},
            },
            404,
            "collection_not_found",
        ),
        ({"json": {"id": "e", "text": ""}, "headers": {"Prefer": "respond-async"}}, 400, "bad_document"),
        ({"content": b"{not json", "headers": {"Content-Type": "application/json"}}, 400, "bad_request"),
        ({"json": {"text": "no id"}}, 400, "bad_request"),
        ({"content": b"text", "headers": {"Content-Type": "text/plain"}}, 400, "bad_request"),
    ],
)
def test_bad_uploads_are_4xx_and_change_nothing(client: httpx.Client, kwargs: dict, status: int, error: str) -> None:
    before = snapshot(client)
    response = client.post("/api/v1/documents", **kwargs)
    assert response.status_code == status, response.text
    assert response.json()["error"] == error
    assert snapshot(client) == before


def test_document_rag(client: httpx.Client, server: LiveServer) -> None:
    client.post("/api/v1/documents", json={"id": "vistula", "text": "The Vistula flows through Warsaw and Krakow."})
    response = client.post("/api/v1/document-rag", json={"question": "Which river flows through Krakow?", "k": 2})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["sources"][0]["title"] == "vistula" and "Vistula" in answer["answer"]
    assert answer["trace"].startswith(server.settings.base_iri + "trace/default/")
    trace = client.get("/sparql", params={"query": f"ASK {{ <{answer['trace']}> ?p ?o }}"}).json()
    assert trace["boolean"] is True
    weighted = client.post(
        "/api/v1/document-rag", json={"question": "Which river flows through Krakow?", "weights": [0, 1]}
    )
    assert weighted.status_code == 200 and weighted.json()["sources"][0]["title"] == "vistula"
    before = server.dataset()  # a refused question writes no trace
    for bad in (
        {},
        {"question": ""},
        {"question": "q", "mode": "psychic"},
        {"question": "q", "k": 0},
        {"question": "q", "weights": [1]},
        {"question": "q", "weights": [-1, 2]},
        {"question": "q", "weights": "x"},
    ):
        rejected = client.post("/api/v1/document-rag", json=bad)
        assert rejected.status_code == 400 and rejected.json()["error"] == "bad_request"
    assert server.dataset() == before


def test_document_rag_streams_server_sent_events(client: httpx.Client, server: LiveServer) -> None:
    client.post("/api/v1/documents", json={"id": "oslo", "text": "Oslo is the capital of Norway. It lies on a fjord."})
    events = []
    with client.stream(
        "POST",
        "/api/v1/document-rag",
        json={"question": "What is the capital of Norway?", "k": 1},
        headers={"Accept": "text/event-stream"},
    ) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        for block in response.read().decode().strip().split("\n\n"):
            name, data = block.split("\n", 1)
            events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    assert [name for name, _ in events] == ["sources", "token", "done"]
    assert events[0][1]["sources"][0]["title"] == "oslo"
    assert events[1][1]["text"] == events[2][1]["answer"] and "Oslo is the capital of Norway." in events[2][1]["answer"]
    assert events[2][1]["trace"].startswith(server.settings.base_iri + "trace/default/")


def finished(client: httpx.Client, href: str) -> tuple[dict, set[str]]:
    """A background ingest's last status (ready or failed, within a minute), and every status seen on the way."""
    seen: set[str] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = client.get(href).json()
        seen.add(status["status"])
        if status["status"] in ("ready", "failed"):
            break
        time.sleep(0.05)
    return status, seen


def test_background_upload_answers_202_then_the_status_url_shows_it_ready(client: httpx.Client) -> None:
    text = "\n\n".join(f"Person{i} Smith was born in City{i}. City{i} is a town in Norway." for i in range(40))
    accepted = client.post("/api/v1/documents", json={"id": "towns", "text": text}, headers={"Prefer": "respond-async"})
    assert accepted.status_code == 202, accepted.text
    (item,) = accepted.json()["documents"]
    assert item["status"] == "queued" and accepted.headers["location"] == item["href"]
    status, seen = finished(client, item["href"])
    assert status["status"] == "ready" and status["chunks"] >= 1 and seen <= {"queued", "processing", "ready"}
    again = client.post("/api/v1/documents?async=true", json={"id": "towns", "text": text})
    assert again.status_code == 202 and again.json()["documents"][0]["status"] == "unchanged"


def test_reingest_extracts_a_document_again(client: httpx.Client) -> None:
    client.post("/api/v1/documents", json={"id": "again", "text": "Niels Bohr was born in Copenhagen."})
    before = client.get("/api/v1/documents/again").json()
    response = client.post("/api/v1/documents/again/reingest")
    assert response.status_code == 201, response.text
    (item,) = response.json()["documents"]
    assert (item["status"], item["chunks_added"], item["chunks_removed"]) == ("ready", 1, 1)
    after = client.get("/api/v1/documents/again").json()
    assert (after["status"], after["chunks"], after["created"]) == ("ready", 1, before["created"])
    background = client.post("/api/v1/documents/again/reingest", headers={"Prefer": "respond-async"})
    assert background.status_code == 202 and background.json()["documents"][0]["status"] == "queued"
    assert finished(client, background.json()["documents"][0]["href"])[0]["status"] == "ready"  # none left running
    missing = client.post("/api/v1/documents/never-uploaded/reingest")
    assert missing.status_code == 404 and missing.json()["error"] == "document_not_found"


def test_collections_api(client: httpx.Client, server: LiveServer) -> None:
    created = client.post("/api/v1/collections", json={"name": "papers"})
    assert created.status_code == 201, created.text
    assert created.headers["location"] == "/api/v1/collections/papers" and created.json()["documents"] == 0
    assert client.post("/api/v1/collections", json={"name": "papers"}).json()["error"] == "collection_exists"
    upload = client.post(
        "/api/v1/documents?collection=papers", json={"id": "bohr", "text": "Niels Bohr was born in Copenhagen."}
    )
    assert upload.status_code == 201
    listing = {c["name"]: c for c in client.get("/api/v1/collections").json()["collections"]}
    assert listing["papers"]["documents"] == 1 and listing["papers"]["facts"] > 0 and "default" in listing
    assert [d["id"] for d in client.get("/api/v1/documents", params={"collection": "papers"}).json()["documents"]] == [
        "bohr"
    ]
    rag = client.post("/api/v1/document-rag", json={"question": "Where was Bohr born?", "collection": "papers", "k": 3})
    assert [s["title"] for s in rag.json()["sources"]] == ["bohr"]
    assert client.delete("/api/v1/collections/papers").status_code == 204
    emptied = client.delete("/api/v1/collections/default")  # it always exists: emptied, and it says so
    assert emptied.status_code == 200 and emptied.json() == {
        "collection": "default",
        "emptied": True,
        "detail": "the default collection always exists: it was emptied, and stays",
    }
    assert client.get("/api/v1/collections/default").json()["documents"] == 0
    graphs = client.get("/sparql", params={"query": "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"}).json()
    assert not [b for b in graphs["results"]["bindings"] if "/papers" in b["g"]["value"]]
    refusals: list[tuple[str, str, dict[str, Any], int, str]] = [
        ("GET", "/api/v1/collections/papers", {}, 404, "collection_not_found"),
        ("DELETE", "/api/v1/collections/papers", {}, 404, "collection_not_found"),
        ("GET", "/api/v1/documents", {"params": {"collection": "papers"}}, 404, "collection_not_found"),
        (
            "POST",
            "/api/v1/document-rag",
            {"json": {"question": "q", "collection": "papers"}},
            404,
            "collection_not_found",
        ),
        ("POST", "/api/v1/collections", {"json": {"name": "Bad Name"}}, 400, "bad_collection"),
        ("POST", "/api/v1/collections", {"json": {"title": "no name"}}, 400, "bad_request"),
        ("DELETE", "/api/v1/collections/Bad%20Name", {}, 400, "bad_collection"),
    ]
    for method, path, kwargs, status, error in refusals:
        before = snapshot(client)
        response = client.request(method, path, **kwargs)
        assert (response.status_code, response.json()["error"]) == (status, error), (method, path, response.text)
        assert snapshot(client) == before
