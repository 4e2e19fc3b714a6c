"""`/api/v1/graph-rag` and `/api/v1/traces` over real HTTP."""

from __future__ import annotations

import asyncio
import html
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pyoxigraph import Literal, NamedNode, RdfFormat, parse

from sparqlrag.operations.access import EVERYTHING
from sparqlrag.server.mcp_servers import McpServers
from sparqlrag.server.state import app_state
from tests.conftest import LiveServer, start_server

DOCS = {
    "curie": "Marie Curie was born in Warsaw. Marie Curie worked at the Sorbonne.",
    "warsaw": "Warsaw is the capital of Poland. The Vistula flows through Warsaw.",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live, stop = start_server(tmp_path_factory.mktemp("answers"))
    with live.client() as client:
        for document_id, text in DOCS.items():
            assert client.post("/api/v1/documents", json={"id": document_id, "text": text}).status_code == 201
        assert client.post("/api/v1/collections", json={"name": "empty"}).status_code == 201
    yield live
    stop()


def _events(client: httpx.Client, path: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs of a streamed answer."""
    with client.stream("POST", path, json=body, headers={"Accept": "text/event-stream"}) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        blocks = response.read().decode().strip().split("\n\n")
    return [
        (name.removeprefix("event: "), json.loads(data.removeprefix("data: ")))
        for name, data in (block.split("\n", 1) for block in blocks)
    ]


@pytest.mark.parametrize("mode", ["evidence", "pagerank", "graph", "hybrid"])
def test_an_answer_and_its_trace_say_the_same(client: httpx.Client, server: LiveServer, mode: str) -> None:
    """One model per part (retrieval/views.py): the answer's JSON, its streamed events, its trace
    read back from the trace graph (/traces/{id}, the trace page) and MCP's `ask` carry the same
    seeds, edges and sources."""
    question = {"question": "Where was Marie Curie born?", "mode": mode}
    answer = client.post("/api/v1/graph-rag", json=question).json()
    trace = client.get(f"/api/v1/traces/{answer['trace'].rsplit('/', 1)[1]}").json()
    assert answer["edges"] and answer["seeds"] and answer["sources"]
    for part in ("seeds", "edges", "sources", "pagerank_seeds", "explored_edges", "answer", "question"):
        assert trace[part] == answer[part], part
    streamed = dict(_events(client, "/api/v1/graph-rag", question))  # (each event's last: "edges" once, "sources" once)
    assert streamed["seeds"]["seeds"] == answer["seeds"] and streamed["edges"]["edges"] == answer["edges"]
    assert streamed["sources"]["sources"] == answer["sources"] and streamed["done"]["answer"] == answer["answer"]
    assert sorted(trace["concepts"]) == sorted(answer["concepts"])  # (RDF keeps no order among a trace's concepts)
    page = client.get(
        "/" + answer["trace"].removeprefix(server.settings.base_iri),
        follow_redirects=True,
        headers={"Accept": "text/html"},
    ).text
    assert all(html.escape(source["chunk"]) in page for source in answer["sources"])
    assert ">Marie Curie</a>" in page and ">marie curie</a>" not in page  # things by their labels, not IRI ends
    assert trace["labels"][answer["seeds"][0]["entity"]] == answer["seeds"][0]["label"] == "Marie Curie"
    servers = McpServers(server.settings.base_iri, lambda: app_state(server.app).services, lambda context: EVERYTHING)
    told = asyncio.run(servers.ask("Where was Marie Curie born?", None, mode=mode))  # type: ignore[arg-type]
    assert told["facts"] == [edge["text"] for edge in answer["edges"]]
    assert [s["chunk"] for s in told["sources"]] == [s["chunk"] for s in answer["sources"]]
    assert [s.get("bridged_by", []) for s in told["sources"]] == [
        [fact["text"] for fact in s["bridged_by"]] for s in answer["sources"]
    ]


def test_graph_rag_answers_with_facts_sources_and_a_trace(client: httpx.Client, server: LiveServer) -> None:
    response = client.post("/api/v1/graph-rag", json={"question": "Where was Marie Curie born?", "max_path_length": 1})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert "Marie Curie was born in Warsaw." in answer["answer"] and answer["sources"][0]["title"] == "curie"
    assert answer["seeds"][0]["entity"] == server.settings.base_iri + "id/default/marie-curie"
    born = next(e for e in answer["edges"] if e["labels"][1] == "was born in")
    assert born["statement"] and born["hop"] == 1 and born["chunks"] == [answer["sources"][0]["chunk"]]
    trace_id = answer["trace"].rsplit("/", 1)[1]
    listed = client.get("/api/v1/traces").json()["traces"]
    assert listed[0]["id"] == trace_id and listed[0]["mode"] == "graph-rag/evidence"  # the default mode
    # the trace IRI dereferences: a page for a browser, its JSON for anything else
    path = "/" + answer["trace"].removeprefix(server.settings.base_iri)
    page = client.get(path, headers={"Accept": "text/html"}, follow_redirects=True)
    assert page.status_code == 200 and "Where was Marie Curie born?" in page.text and "Facts the walk kept" in page.text
    assert client.get(path, follow_redirects=True).json()["id"] == trace_id
    assert client.get(path.replace(trace_id, "0" * 32)).status_code == 404
    # ...and its RDF for an RDF client, in every syntax an entity's IRI offers (issue 37, item 6)
    for accept, syntax in (
        ("text/turtle", RdfFormat.TURTLE),
        ("application/ld+json", RdfFormat.JSON_LD),
        ("application/rdf+xml", RdfFormat.RDF_XML),
        ("application/n-triples", RdfFormat.N_TRIPLES),
    ):
        rdf = client.get(path, headers={"Accept": accept}, follow_redirects=True)
        assert rdf.status_code == 200 and rdf.headers["content-type"].startswith(accept), (accept, rdf.text[:300])
        triples = list(parse(rdf.content, format=syntax))
        assert Literal("Where was Marie Curie born?") in {
            t.object for t in triples if t.subject == NamedNode(answer["trace"])
        }
        assert len({t.subject for t in triples}) > 3  # its steps, seeds and sources come with it
    # a fact's reifier (an edge's statement) dereferences to its RDF: what it reifies and where from
    statement = "/" + born["statement"].removeprefix(server.settings.base_iri)
    stated = client.get(statement, headers={"Accept": "text/turtle"}, follow_redirects=True)
    assert stated.status_code == 200 and stated.headers["content-type"].startswith("text/turtle")
    assert born["chunks"][0] in stated.text and "reifies" in stated.text
    assert client.get(statement + "0", headers={"Accept": "text/turtle"}).status_code == 404
    assert client.get(statement, headers={"Accept": "text/html"}).status_code == 406
    trace = client.get(f"/api/v1/traces/{trace_id}").json()
    assert trace["question"] == "Where was Marie Curie born?" and trace["answer"] == answer["answer"]
    assert (
        sorted(trace["concepts"]) == sorted(answer["concepts"]) and trace["explored_edges"] == answer["explored_edges"]
    )
    assert [s["entity"] for s in trace["seeds"]] == [s["entity"] for s in answer["seeds"]]
    assert {(e["subject"], e["predicate"], e["object"]) for e in trace["edges"]} == {
        (e["subject"], e["predicate"], e["object"]) for e in answer["edges"]
    }
    assert [s["chunk"] for s in trace["sources"]] == [s["chunk"] for s in answer["sources"]]
    steps = ["concepts", "grounding", "hop 1", "sources", "passages", "bridges", "synthesis"]
    assert [s["name"] for s in trace["steps"]] == steps


@pytest.mark.parametrize(
    "path",
    [
        "/stmt/default/" + "0" * 40,  # no such reifier
        "/stmt/nowhere/abc",  # no such collection
        "/stmt/default/a%3E%20%7D%20INSERT",  # no IRI at all, with SPARQL in it
        "/stmt/..%2F..%2Fetc%2Fpasswd",
        "/data/stmt/default/x%22%7D.ttl",
        "/data/trace/default/" + "0" * 32 + ".ttl",
        "/data/trace/default/%7B%7D.jsonld",
        "/data/trace/default/abc.exe",
        "/page/stmt/default/abc",  # described in RDF only: no page
    ],
)
def test_a_hostile_record_path_is_a_404_that_changes_nothing(client: httpx.Client, path: str) -> None:
    count = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"
    before = client.get("/sparql", params={"query": count}, headers={"Accept": "text/csv"}).text
    answered = client.get(path, headers={"Accept": "text/turtle"})
    assert answered.status_code == 404 and answered.json()["error"] == "not_found", (path, answered.text[:200])
    assert "Traceback" not in answered.text  # (the path it names is the one asked, percent-encoded as sent)
    assert client.get("/sparql", params={"query": count}, headers={"Accept": "text/csv"}).text == before


def _traced_scorer(client: httpx.Client, route: str, body: dict) -> str:
    answer = client.post(route, json={"question": "Where was Marie Curie born?", **body})
    assert answer.status_code == 200, answer.text
    return str(client.get(f"/api/v1/traces/{answer.json()['trace'].rsplit('/', 1)[1]}").json()["scorer"])


def test_every_trace_says_which_scorer_ranked(client: httpx.Client, server: LiveServer) -> None:
    """The fact index's cosine or the reranker for Graph RAG; cosine, BM25, their fusion or the
    reranker for Document RAG (here the cosine fallback: the test's data directory has no
    cross-encoder)."""
    embedder = server.settings.embedding_model
    reranker = app_state(server.app).services.graph_rag.reranker.name
    assert reranker in (f"flashrank:{server.settings.reranker_model}", f"cosine:{embedder}")
    assert _traced_scorer(client, "/api/v1/graph-rag", {"max_path_length": 1}) == f"facts:cosine:{embedder}"
    assert _traced_scorer(client, "/api/v1/graph-rag", {"max_path_length": 1, "scorer": "text"}) == reranker
    document = {
        "vector": f"cosine:{embedder}",
        "keyword": "bm25",
        "hybrid": f"rrf(cosine:{embedder}, bm25)",
    }
    for mode, scorer in document.items():
        assert _traced_scorer(client, "/api/v1/document-rag", {"mode": mode}) == scorer
    assert _traced_scorer(client, "/api/v1/document-rag", {"mode": "vector", "rerank": True}) == reranker


def test_graph_rag_streams_the_explanation_then_the_answer(client: httpx.Client) -> None:
    with client.stream(
        "POST",
        "/api/v1/graph-rag",
        json={"question": "Which river flows through Warsaw?"},
        headers={"Accept": "text/event-stream"},
    ) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        events = []
        for block in response.read().decode().strip().split("\n\n"):
            name, data = block.split("\n", 1)
            events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    names = [name for name, _ in events]
    assert names[:3] == ["concepts", "seeds", "hop"] and names[-3:] == ["token", "sources", "done"]
    assert "Vistula" in events[-1][1]["answer"] and events[-1][1]["trace"]


def test_hybrid_mode_fuses_document_rags_passages(client: httpx.Client) -> None:
    body = {"question": "Which city does the Vistula flow through?", "mode": "hybrid", "max_path_length": 1}
    answer = client.post("/api/v1/graph-rag", json=body).json()
    trace = client.get(f"/api/v1/traces/{answer['trace'].rsplit('/', 1)[1]}").json()
    assert trace["mode"] == "hybrid" and {s["title"] for s in answer["sources"]} == {
        "warsaw",
        "curie",
    }  # both documents' chunks
    with client.stream("POST", "/api/v1/graph-rag", json={**body, "stream": True}) as response:
        text = response.read().decode()
    assert "event: sources" in text and '"title": "warsaw"' in text


def test_graph_rag_errors_are_4xx(client: httpx.Client, server: LiveServer) -> None:
    before = server.dataset()  # a refused question writes no trace
    cases = [
        ({"question": "q"}, {"collection": "nope"}, 404, "collection_not_found"),
        ({"question": "Where was Marie Curie born?", "collection": "empty", "mode": "graph"}, {}, 409, "empty_graph"),
        ({"question": "why " * 600}, {}, 400, "question_too_long"),
        ({"question": ""}, {}, 400, "bad_request"),
        ({"question": "q", "edge_limit": 0}, {}, 400, "bad_request"),
        ({"question": "q", "max_path_length": "two"}, {}, 400, "bad_request"),
        ({"question": "q", "hops": 2}, {}, 400, "bad_request"),
        ({"question": "q", "mode": "document"}, {}, 400, "bad_request"),
        (["not", "an", "object"], {}, 400, "bad_request"),
    ]
    for body, params, status, error in cases:
        response = client.post("/api/v1/graph-rag", json=body, params=params)
        assert (response.status_code, response.json()["error"]) == (status, error), (body, response.text)
    assert server.dataset() == before
    assert "edge_limit" in client.post("/api/v1/graph-rag", json={"question": "q", "edge_limit": 0}).json()["detail"]
    nothing = client.post("/api/v1/graph-rag", json={"question": "Where was Marie Curie born?", "collection": "empty"})
    assert (
        nothing.status_code == 200 and nothing.json()["sources"] == []
    )  # the default mode answers from passages: none here
    for trace_id in ("0123abcd", "a%20b%3E", "0" * 32):
        missing = client.get(f"/api/v1/traces/{trace_id}")
        assert (missing.status_code, missing.json()["error"]) == (404, "trace_not_found")
    assert client.get("/api/v1/traces", params={"limit": "lots"}).status_code == 400
    assert client.get("/api/v1/traces", params={"collection": "nope"}).status_code == 404
