"""Failure paths forced for real (issue 18): the LLM behind extraction refuses mid-ingest, or
fails in the middle of a streamed answer; an error nobody planned for. What the client sees,
what the store keeps, and that nothing is left to resume."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparqlrag.server.state import app_state
from tests.conftest import LiveServer, start_server
from tests.llm_stub import MessagesStub, Reply, serve_stub

EXTRACTED = Reply(  # one answer for both prompts: each reads the keys it asks for
    '[{"entity": "Warsaw", "definition": "The capital of Poland.", "subject": "Warsaw", "predicate": "capital of",'
    ' "object": "Poland", "object-entity": true}]'
)
REFUSED = Reply(status=400, error_type="invalid_request_error")  # not retried: the call fails at once


@pytest.fixture
def stubbed(tmp_path: Path) -> Iterator[tuple[LiveServer, MessagesStub]]:
    stub, stop_stub = serve_stub()
    stub.default = EXTRACTED
    server, stop = start_server(
        tmp_path / "data", llm="anthropic", llm_base_url=stub.url, llm_api_key="sk-test", extractor="llm"
    )
    yield server, stub
    stop()
    stop_stub()


def _facts(server: LiveServer) -> int:
    with server.client() as client:
        query = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH <http://localhost:7878/graph/default> { ?s ?p ?o } }"
        rows = client.get("/sparql", params={"query": query}).json()["results"]["bindings"]
    return int(rows[0]["n"]["value"])


def test_an_llm_that_refuses_mid_ingest_fails_the_document_and_keeps_the_last_version(
    stubbed: tuple[LiveServer, MessagesStub],
) -> None:
    server, stub = stubbed
    with server.client() as client:
        first = client.post("/api/v1/documents", json={"id": "warsaw", "text": "Warsaw is the capital of Poland."})
        assert first.status_code == 201, first.text
        kept = _facts(server)
        assert kept > 0
        stub.default = REFUSED
        again = client.post(
            "/api/v1/documents", json={"id": "warsaw", "text": "Warsaw is the capital of Poland, on the Vistula."}
        )
        assert again.status_code == 502 and again.json()["error"] == "model_failed", again.text
        assert "HTTP 400" in again.text and "invalid_request_error" not in again.text  # ours, not the LLM's words
        document = client.get("/api/v1/documents/warsaw").json()
        assert document["status"] == "failed"
        assert _facts(server) == kept  # the version before is what the store holds
        assert not list((server.settings.data_dir / "pending").glob("*.json"))  # not resumed at every start
        stub.default = EXTRACTED
        retried = client.post(
            "/api/v1/documents", json={"id": "warsaw", "text": "Warsaw is the capital of Poland, on the Vistula."}
        )
        assert retried.status_code == 201 and client.get("/api/v1/documents/warsaw").json()["status"] == "ready"


def test_in_a_batch_the_document_the_llm_refuses_fails_alone(stubbed: tuple[LiveServer, MessagesStub]) -> None:
    server, stub = stubbed
    stub.refuse_text = "Krakow"
    files = [
        ("file", ("warsaw.txt", b"Warsaw is the capital of Poland.", "text/plain")),
        ("file", ("krakow.txt", b"Krakow was the capital of Poland.", "text/plain")),
    ]
    with server.client() as client:
        response = client.post("/api/v1/documents", files=files)
        listed = {d["id"]: d for d in client.get("/api/v1/documents").json()["documents"]}
    statuses = {name: document["status"] for name, document in listed.items()}
    assert response.status_code == 201 and statuses == {"warsaw.txt": "ready", "krakow.txt": "failed"}
    assert "HTTP 400" in listed["krakow.txt"]["error"] and listed["warsaw.txt"]["error"] is None  # the library's reason
    assert listed["warsaw.txt"]["facts"] > 0 and listed["krakow.txt"]["facts"] is None
    failed = next(d for d in response.json()["documents"] if d["id"] == "krakow.txt")
    assert failed["status"] == "failed" and "HTTP 400" in failed["error"]
    assert "invalid_request_error" not in response.text  # the LLM's own answer is never passed on
    assert _facts(server) > 0 and not list((server.settings.data_dir / "pending").glob("*.json"))


def test_a_collection_being_ingested_is_busy_and_a_document_being_ingested_is_deleted_after(
    stubbed: tuple[LiveServer, MessagesStub],
) -> None:
    """While an ingest waits on the LLM: deleting its collection is a 409 that changes nothing;
    deleting its document waits for the ingest, then removes all of it."""
    server, stub = stubbed
    stub.default = Reply(EXTRACTED.text, delay=2.0)
    with server.client() as client:
        assert client.post("/api/v1/collections", json={"name": "lab"}).status_code == 201
        queued = client.post(
            "/api/v1/documents",
            params={"collection": "lab", "async": "true"},
            json={"id": "warsaw", "text": "Warsaw is the capital of Poland."},
        )
        assert queued.status_code == 202, queued.text
        deadline = time.monotonic() + 60
        while stub.in_flight == 0 and time.monotonic() < deadline:  # the extraction has reached the LLM
            time.sleep(0.01)
        assert stub.in_flight > 0
        before = server.dataset()
        busy = client.delete("/api/v1/collections/lab")
        assert busy.status_code == 409 and busy.json()["error"] == "collection_busy", busy.text
        assert server.dataset() == before
        deleted = client.delete("/api/v1/documents/warsaw", params={"collection": "lab"})
        assert deleted.status_code == 204, deleted.text
        assert client.get("/api/v1/documents/warsaw", params={"collection": "lab"}).status_code == 404
        query = "ASK { GRAPH <http://localhost:7878/graph/lab> { ?s ?p ?o } }"
        assert client.get("/sparql", params={"query": query}).json()["boolean"] is False  # no fact of it is left
    assert not list((server.settings.data_dir / "pending").glob("*.json"))


def _events(client: httpx.Client, question: str) -> list[tuple[str, dict[str, Any]]]:
    with client.stream("POST", "/api/v1/graph-rag", json={"question": question, "stream": True}) as response:
        assert response.status_code == 200
        blocks = response.read().decode().strip().split("\n\n")
    return [
        (name.removeprefix("event: "), json.loads(data.removeprefix("data: ")))
        for name, data in (block.split("\n", 1) for block in blocks)
    ]


def _traces(client: httpx.Client) -> int:
    return len(client.get("/api/v1/traces").json()["traces"])


def test_an_llm_failing_mid_answer_ends_the_stream_with_an_error_and_writes_no_trace(
    stubbed: tuple[LiveServer, MessagesStub],
) -> None:
    server, stub = stubbed
    with server.client() as client:
        assert client.post("/api/v1/documents", json={"id": "w", "text": "Warsaw is the capital of Poland."}).is_success
        traces = _traces(client)
        stub.default = Reply("Warsaw is the capital of Poland, on the Vistula river.", fail_after=3)
        events = _events(client, "What is Warsaw the capital of?")
        names = [name for name, _ in events]
        assert names.count("token") == 3 and names[-1] == "error" and "done" not in names and "sources" not in names
        error = events[-1][1]
        assert error["error"] == "model_failed" and "/internal/host-7" not in json.dumps(error)
        assert _traces(client) == traces  # no half trace
        stub.default = Reply("Warsaw is the capital of Poland.")
        assert _events(client, "What is Warsaw the capital of?")[-1][0] == "done" and _traces(client) == traces + 1


def test_an_unplanned_error_is_a_500_without_its_text_plain_or_streamed(
    stubbed: tuple[LiveServer, MessagesStub], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = stubbed
    secret = "walk failed at /srv/secret/graph.py line 12"

    async def broken(*_: object, **__: object) -> None:
        raise RuntimeError(secret)

    monkeypatch.setattr(app_state(server.app).services.graph_rag, "_ground", broken)  # the walk's second stage
    with server.client() as client:
        plain = client.post("/api/v1/graph-rag", json={"question": "Where is Warsaw?"})
        assert plain.status_code == 500 and plain.json() == {
            "error": "internal_error",
            "detail": "unexpected server error; see the server log",
        }
        streamed = _events(client, "Where is Warsaw?")
        assert [name for name, _ in streamed] == ["concepts", "error"]
        assert streamed[-1][1] == {"error": "internal_error", "detail": "unexpected server error; see the server log"}
        for text in (plain.text, json.dumps(streamed)):
            assert "secret" not in text and "Traceback" not in text


def test_an_ingest_running_at_shutdown_keeps_its_marker_and_resumes_at_the_next_start(tmp_path: Path) -> None:
    """An orderly stop cancels background ingests but keeps their pending markers; the next
    start finishes them, with the server answering meanwhile."""
    stub, stop_stub = serve_stub()
    stub.default = Reply(EXTRACTED.text, delay=60)  # the extraction is under way at the stop
    settings: dict[str, Any] = {"llm": "anthropic", "llm_base_url": stub.url, "llm_api_key": "sk-test"}
    settings["extractor"] = "llm"
    try:
        server, stop = start_server(tmp_path / "data", **settings)
        with server.client() as client:
            queued = client.post(
                "/api/v1/documents",
                json={"id": "warsaw", "text": "Warsaw is the capital of Poland."},
                headers={"Prefer": "respond-async"},
            )
            assert queued.status_code == 202, queued.text
            deadline = time.monotonic() + 30
            while not stub.requests:
                assert time.monotonic() < deadline, "the extraction never reached the LLM"
                time.sleep(0.05)
        stop()
        assert len(list((tmp_path / "data" / "pending").glob("*.json"))) == 1
        stub.default = EXTRACTED
        server, stop = start_server(tmp_path / "data", **settings)
        try:
            with server.client() as client:
                deadline = time.monotonic() + 60
                while (status := client.get("/api/v1/documents/warsaw").json()["status"]) != "ready":
                    assert time.monotonic() < deadline and status != "failed", status
                    time.sleep(0.1)
            assert _facts(server) > 0 and not any((tmp_path / "data" / "pending").glob("*.json"))
        finally:
            stop()
    finally:
        stop_stub()
