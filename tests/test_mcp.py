"""The MCP server, driven by the `mcp` SDK's own client: over streamable HTTP at `/mcp` on a
real server, and over stdio from `sparqlrag mcp` as an assistant would start it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from sparqlrag.config import Settings
from sparqlrag.operations.access import EVERYTHING, READ_EVERYTHING
from sparqlrag.operations.failures import Refused
from sparqlrag.server import mcp_servers
from sparqlrag.server.mcp_servers import McpServers
from sparqlrag.services import Services
from sparqlrag.store import EmbeddedStore
from tests.conftest import SPARQLRAG, LiveServer, start_server
from tests.security.conftest import Listener

ADMIN, READER, FINANCE = "admin-token", "reader-token", "finance-token"
GRANTS = {FINANCE: ["write:finance"]}
CURIE = "Marie Curie was born in Warsaw. Marie Curie worked at the Sorbonne in Paris."
ACME = "Acme Bank lends money to traders in Oslo. Acme Bank was founded by Ole Berg."
ONTOLOGY = (
    "@prefix owl: <http://www.w3.org/2002/07/owl#> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
    '<http://ex/onto> a owl:Ontology . <http://ex/Person> a owl:Class ; rdfs:label "Person" .\n'
)
SEARCH = """PREFIX sr: <https://w3id.org/sparqlrag/ns#>
SELECT ?rank ?chunk WHERE {{ SERVICE sr:documentRag {{
  ?hit sr:question "Where was Marie Curie born?" ; sr:collection "{collection}" ; sr:k 2 ;
       sr:chunk ?chunk ; sr:rank ?rank }} }} ORDER BY ?rank"""
READ_TOOLS = {
    "ask",
    "search_documents",
    "sparql_query",
    "describe_entity",
    "explore_entity",
    "list_collections",
    "list_documents",
}
T = TypeVar("T")
BASE = "http://tools.example/"
MODES = ("hybrid", "keyword", "vector")  # search_documents' modes


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live, stop = start_server(
        tmp_path_factory.mktemp("mcp"),
        write_tokens=[ADMIN],
        read_tokens=[READER],
        collection_tokens=GRANTS,
        answer_rate=0,
        max_sparql_bytes=100_000,
    )
    with live.client(ADMIN) as admin:
        assert admin.post("/api/v1/documents", json={"id": "curie", "text": CURIE}).status_code == 201
        assert admin.post("/api/v1/collections", json={"name": "finance"}).status_code == 201
        loaded = admin.post("/api/v1/ontologies?name=people", content=ONTOLOGY, headers={"Content-Type": "text/turtle"})
        assert loaded.status_code == 201, loaded.text
    yield live
    stop()


def _over_http(server: LiveServer, token: str, steps: Callable[[Client], Awaitable[T]]) -> T:
    async def session() -> T:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
            async with Client(streamable_http_client(server.url + "/mcp", http_client=http)) as client:
                return await steps(client)

    return anyio.run(session)


def _result(called: CallToolResult) -> dict[str, Any]:
    assert not called.is_error, called.content
    assert called.structured_content is not None
    return called.structured_content


def _error(called: CallToolResult) -> str:
    assert called.is_error
    text = " ".join(getattr(part, "text", "") for part in called.content)
    assert "Traceback" not in text and 'File "' not in text
    return text


def test_a_query_over_max_sparql_bytes_is_refused_as_over_http(server: LiveServer) -> None:
    query = "# " + "x" * 200_000 + "\nASK {}"

    async def steps(client: Client) -> str:
        return _error(await client.call_tool("sparql_query", {"query": query}))

    assert "max_sparql_bytes" in _over_http(server, READER, steps)
    with server.client(READER) as client:
        refused = client.post("/sparql", content=query, headers={"Content-Type": "application/sparql-query"})
    assert refused.status_code == 413


def test_the_tools_answer_over_http(server: LiveServer) -> None:
    async def steps(client: Client) -> dict[str, Any]:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        added = _result(
            await client.call_tool(
                "add_document", {"text": ACME, "document_id": "acme", "collection": "finance", "title": "Acme"}
            )
        )
        return {
            "tools": tools,
            "added": added,
            "default": _result(await client.call_tool("ask", {"question": "Where was Marie Curie born?"})),
            "graph": _result(
                await client.call_tool("ask", {"question": "Where was Marie Curie born?", "mode": "graph"})
            ),
            "document": _result(
                await client.call_tool(
                    "ask", {"question": "Who founded Acme Bank?", "collection": "finance", "mode": "document"}
                )
            ),
            "search": _result(await client.call_tool("search_documents", {"query": "Sorbonne", "k": 1})),
            **{
                f"{mode} {question}": _result(
                    await client.call_tool("search_documents", {"query": question, "mode": mode})
                )
                for mode, question in (
                    ("hybrid", "Where was Marie Curie born?"),
                    ("keyword", "Where was Marie Curie born?"),
                    ("vector", "Where was Marie Curie born?"),
                    ("vector", "loans to traders"),
                )
            },
            "select": _result(
                await client.call_tool(
                    "sparql_query", {"query": "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g"}
                )
            ),
            "ask": _result(await client.call_tool("sparql_query", {"query": "ASK { ?s ?p ?o }"})),
            "construct": _result(
                await client.call_tool("sparql_query", {"query": "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o } LIMIT 300"})
            ),
            "by_name": _result(await client.call_tool("describe_entity", {"entity": "Marie Curie"})),
            "retrieved": _result(
                await client.call_tool("sparql_query", {"query": SEARCH.format(collection="default")})
            ),
            "explored": _result(
                await client.call_tool("explore_entity", {"entity": base + "id/default/marie-curie", "depth": 1})
            ),
            "collections": _result(await client.call_tool("list_collections", {})),
            "documents": _result(await client.call_tool("list_documents", {"collection": "finance"})),
            "resources": {str(r.uri) for r in (await client.list_resources()).resources},
            "templates": {t.uri_template for t in (await client.list_resource_templates()).resource_templates},
            "vocabulary": (await client.read_resource("sparqlrag://vocabulary/sr.ttl")).contents[0],
            "ontologies": (await client.read_resource("sparqlrag://ontologies")).contents[0],
            "ontology": (await client.read_resource("sparqlrag://ontologies/people")).contents[0],
        }

    base = server.settings.base_iri
    seen = _over_http(server, ADMIN, steps)
    assert seen["tools"] == READ_TOOLS | {"add_document"}
    assert seen["added"]["status"] == "ready" and seen["added"]["facts"] > 0
    for mode in ("default", "graph"):
        answer = seen[mode]
        assert "Warsaw" in answer["answer"] and answer["sources"][0]["title"] == "curie", answer
        assert answer["sources"][0]["citation"] == "curie"  # (a text has no pages: cited by its title)
        assert any("born in" in fact for fact in answer["facts"])
        assert answer["trace"].startswith(base + "trace/default/")
    assert "Ole Berg" in seen["document"]["answer"] and seen["document"]["trace"].startswith(base + "trace/finance/")
    assert [(p["title"], p["rank"]) for p in seen["search"]["passages"]] == [("curie", 1)]
    # `similarity` means the same in every mode: the query's and the passage's embeddings' cosine
    (on_topic,) = {seen[f"{mode} Where was Marie Curie born?"]["passages"][0]["similarity"] for mode in MODES}
    (vector,) = seen["vector Where was Marie Curie born?"]["passages"]
    (off_topic,) = seen["vector loans to traders"]["passages"]
    assert abs(vector["score"] - on_topic) < 1e-3 and abs(off_topic["score"] - off_topic["similarity"]) < 1e-3
    assert -1 <= off_topic["similarity"] < on_topic <= 1
    assert base + "graph/finance" in [row["g"] for row in seen["select"]["rows"]]
    assert seen["ask"] == {"boolean": True}
    assert len(seen["construct"]["triples"]) == 200 and seen["construct"]["total"] == 300  # capped, and said so
    described = seen["by_name"]
    assert (
        described["iri"] == base + "id/default/marie-curie"
        and described["page"] == base + "page/id/default/marie-curie"
    )
    born = next(f for f in described["facts"] if "born in" in f["fact"])
    assert born["sources"][0]["sentence"] == "Marie Curie was born in Warsaw."
    assert seen["retrieved"]["rows"][0]["rank"] == "1"  # retrieval inside the query (one chunk in default)
    assert seen["retrieved"]["rows"][0]["chunk"].startswith(base + "doc/default/curie")
    explored = seen["explored"]  # the explorer's picture, as the HTTP route gives it
    assert explored["nodes"][0]["label"] == "Marie Curie" and "Warsaw" in {n["label"] for n in explored["nodes"]}
    assert any("born in" in e["label"] and e["evidence"] >= 1 for e in explored["edges"]), explored["edges"]
    assert {c["name"] for c in seen["collections"]["collections"]} == {"default", "finance"}
    assert [d["id"] for d in seen["documents"]["documents"]] == ["acme"]
    assert seen["resources"] == {"sparqlrag://vocabulary/sr.ttl", "sparqlrag://ontologies"}
    assert seen["templates"] == {"sparqlrag://ontologies/{name}"}
    assert "sr:Trace" in seen["vocabulary"].text and "sr:scorer" in seen["vocabulary"].text
    assert json.loads(seen["ontologies"].text)["ontologies"][0]["name"] == "people"
    assert "Person" in seen["ontology"].text


def test_a_read_token_gets_no_write_tool(server: LiveServer) -> None:
    async def steps(client: Client) -> tuple[set[str], CallToolResult]:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        return tools, await client.call_tool("add_document", {"text": "x", "document_id": "x"})

    before = server.dataset(ADMIN)
    tools, refused = _over_http(server, READER, steps)
    assert tools == READ_TOOLS
    assert "add_document" in _error(refused)
    assert server.dataset(ADMIN) == before


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_mcp_needs_a_token_like_every_route(server: LiveServer, token: str | None) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    with server.client(token) as client:
        refused = client.post("/mcp", json=initialize, headers={"Accept": "application/json, text/event-stream"})
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"


def test_a_collection_token_reaches_its_collection_alone(server: LiveServer) -> None:
    hr_graph = server.settings.base_iri + "graph/default"

    async def steps(client: Client) -> dict[str, Any]:
        return {
            "collections": _result(await client.call_tool("list_collections", {})),
            "ask_other": await client.call_tool("ask", {"question": "Where was Marie Curie born?"}),
            "describe_other": await client.call_tool(
                "describe_entity",
                {"entity": server.settings.base_iri + "id/default/marie-curie", "collection": "finance"},
            ),
            "graphs": _result(
                await client.call_tool("sparql_query", {"query": "SELECT DISTINCT ?g WHERE { GRAPH ?g {} }"})
            ),
            "from_other": _result(
                await client.call_tool("sparql_query", {"query": f"SELECT ?o FROM <{hr_graph}> WHERE {{ ?s ?p ?o }}"})
            ),
            "service": await client.call_tool(
                "sparql_query", {"query": f"SELECT * WHERE {{ SERVICE <{server.url}/sparql> {{ ?s ?p ?o }} }}"}
            ),
            "search_other": await client.call_tool("sparql_query", {"query": SEARCH.format(collection="default")}),
            "search_own": _result(
                await client.call_tool("sparql_query", {"query": SEARCH.format(collection="finance")})
            ),
            "write_other": await client.call_tool("add_document", {"text": "x", "document_id": "x"}),
            "write_own": _result(
                await client.call_tool(
                    "add_document",
                    {"text": "Ole Berg lives in Bergen.", "document_id": "berg", "collection": "finance"},
                )
            ),
        }

    seen = _over_http(server, FINANCE, steps)
    assert [c["name"] for c in seen["collections"]["collections"]] == ["finance"]
    for refused in ("ask_other", "describe_other", "write_other"):
        assert "forbidden" in _error(seen[refused]) and "'default'" in _error(seen[refused]), refused
    assert all(row["g"].startswith(server.settings.base_iri + "graph/finance") for row in seen["graphs"]["rows"])
    assert not any("Curie" in str(row) for row in seen["from_other"]["rows"])
    assert "forbidden" in _error(seen["service"])
    assert "forbidden" in _error(seen["search_other"]) and "'default'" in _error(seen["search_other"])
    assert all(row["chunk"].startswith(server.settings.base_iri + "doc/finance/") for row in seen["search_own"]["rows"])
    assert seen["search_own"]["rows"]
    assert seen["write_own"]["status"] == "ready"


def test_failures_are_tool_errors_with_the_apis_words(server: LiveServer) -> None:
    async def steps(client: Client) -> list[CallToolResult]:
        return [
            await client.call_tool("ask", {"question": "q", "collection": "Not A Name"}),
            await client.call_tool("ask", {"question": "q", "collection": "nowhere"}),
            await client.call_tool("ask", {"question": "why " * 600}),
            await client.call_tool("sparql_query", {"query": "SELECT WHERE {"}),
            await client.call_tool("sparql_query", {"query": "CLEAR ALL"}),
            await client.call_tool("sparql_query", {"query": "SELEC * WHERE { ?s ?p ?o }"}),
            await client.call_tool("search_documents", {"query": "x", "k": 0}),
            await client.call_tool("describe_entity", {"entity": "Nobody At All"}),
            await client.call_tool("add_document", {"text": "", "document_id": "empty"}),
            await client.call_tool("explore_entity", {"entity": server.settings.base_iri + "id/default/x", "depth": 4}),
        ]

    before = server.dataset(ADMIN)
    texts = [_error(called) for called in _over_http(server, ADMIN, steps)]
    expected = ["bad_collection", "collection_not_found", "question_too_long", "syntax_error"]
    expected += ["updates are not allowed here (CLEAR)", "not 'SELEC'"]  # not a parser's "expected CONSTRUCT"
    expected += ["bad_request", "not_found", "bad_document", "bad_request: depth must be an integer from 0 to 3"]
    for text, code in zip(texts, expected, strict=True):
        assert code in text, texts
    assert server.dataset(ADMIN) == before  # a refused question writes no trace; CLEAR ALL never ran


def test_questions_over_mcp_share_the_tokens_answer_rate(tmp_path: Path) -> None:
    """The HTTP API's per-token answer limit holds for `ask` too: one answer a minute here."""
    live, stop = start_server(tmp_path, write_tokens=[ADMIN], answer_rate=1)
    try:
        with live.client(ADMIN) as admin:
            assert admin.post("/api/v1/documents", json={"id": "curie", "text": CURIE}).status_code == 201

        async def twice(client: Client) -> list[CallToolResult]:
            return [await client.call_tool("ask", {"question": "Where was Marie Curie born?"}) for _ in range(2)]

        first, second = _over_http(live, ADMIN, twice)
        assert "Warsaw" in _result(first)["answer"]
        assert "rate_limited" in _error(second)
    finally:
        stop()


def test_hostile_mcp_input_is_refused_and_reaches_nothing(server: LiveServer) -> None:
    """Bodies that are no MCP message get a 4xx; SERVICE and LOAD pointed at a listening port,
    and an entity named by an outside URL, contact nothing; the store stays as it was."""
    listener = Listener()
    before = server.dataset(ADMIN)
    accept = {"Accept": "application/json, text/event-stream"}
    try:
        with server.client(ADMIN) as client:
            as_text = client.post("/mcp", content=b"ping", headers={**accept, "Content-Type": "text/plain"})
            assert as_text.status_code == 415 and as_text.json()["error"] == "unsupported_media_type"
            for body in (b"{not json", b"[]", b'"x"', b"{" * 10_000, b'{"jsonrpc": "2.0"}' + b" " * (5 << 20)):
                refused = client.post("/mcp", content=body, headers={**accept, "Content-Type": "application/json"})
                assert 400 <= refused.status_code < 500, (body[:20], refused.status_code)

        async def reach_out(client: Client) -> list[CallToolResult]:
            return [
                await client.call_tool(
                    "sparql_query", {"query": f"SELECT * WHERE {{ SERVICE <{listener.url()}> {{ ?s ?p ?o }} }}"}
                ),
                await client.call_tool("sparql_query", {"query": f"LOAD <{listener.url()}>"}),
                await client.call_tool("describe_entity", {"entity": listener.url()}),
            ]

        service, load, outside = _over_http(server, ADMIN, reach_out)
        assert "remote_access_refused" in _error(service)
        assert "updates are not allowed here" in _error(load)  # an update is no query: the tool never runs one
        assert "not_found" in _error(outside)
        assert listener.contacts == []
    finally:
        listener.close()
    assert server.dataset(ADMIN) == before


def _stdio(data_dir: Path, token: str | None, steps: Callable[[Client], Awaitable[T]]) -> T:
    environment = {**os.environ, "SPARQLRAG_WRITE_TOKENS": ADMIN, "SPARQLRAG_READ_TOKENS": READER}
    if token:
        environment["SPARQLRAG_TOKEN"] = token
    parameters = StdioServerParameters(command=SPARQLRAG, args=["mcp", "--data-dir", str(data_dir)], env=environment)

    async def session() -> T:
        async with Client(parameters) as client:
            return await steps(client)

    return anyio.run(session)


def test_stdio_serves_the_same_tools_with_the_tokens_grants(tmp_path: Path) -> None:
    async def write_and_ask(client: Client) -> tuple[set[str], dict[str, Any], dict[str, Any]]:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        added = _result(await client.call_tool("add_document", {"text": CURIE, "document_id": "curie"}))
        return tools, added, _result(await client.call_tool("ask", {"question": "Where was Marie Curie born?"}))

    tools, added, answer = _stdio(tmp_path, ADMIN, write_and_ask)
    assert tools == READ_TOOLS | {"add_document"} and added["status"] == "ready"
    assert "Warsaw" in answer["answer"] and answer["sources"][0]["title"] == "curie"

    async def read_only(client: Client) -> tuple[set[str], dict[str, Any]]:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        return tools, _result(await client.call_tool("list_documents", {}))

    tools, documents = _stdio(tmp_path, READER, read_only)
    assert tools == READ_TOOLS and [d["id"] for d in documents["documents"]] == ["curie"]


@pytest.mark.parametrize(("token", "says"), [(None, "set SPARQLRAG_TOKEN"), ("wrong", "not valid")])
def test_stdio_without_a_valid_token_stops_with_a_clear_error(tmp_path: Path, token: str | None, says: str) -> None:
    environment = {**os.environ, "SPARQLRAG_WRITE_TOKENS": ADMIN} | ({"SPARQLRAG_TOKEN": token} if token else {})
    stopped = subprocess.run(
        [SPARQLRAG, "mcp", "--data-dir", str(tmp_path)],
        env=environment,
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert stopped.returncode == 2 and says in stopped.stderr and "Traceback" not in stopped.stderr
    assert stopped.stdout == ""  # stdout is the protocol's: nothing else is ever written there


def test_an_open_server_guards_mcp_against_dns_rebinding(tmp_path: Path) -> None:
    """Without tokens the server is on loopback; a page on another name that resolves there
    (DNS rebinding) sends its own Host, which /mcp refuses."""
    live, stop = start_server(tmp_path)
    try:
        with httpx.Client(base_url=live.url, timeout=60) as client:
            rebound = client.post(
                "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Host": "evil.example:7878"}
            )
        assert rebound.status_code in (403, 421), rebound.text
    finally:
        stop()


def test_each_tool_is_a_method_that_runs_without_a_transport(tmp_path: Path) -> None:
    """The tools are importable methods of McpServers: called here with no MCP session, on
    services of their own, under two callers' access."""
    store = EmbeddedStore(tmp_path / "store")
    services = Services.open(Settings(data_dir=tmp_path, base_iri=BASE, reranker_model=None), store)
    try:
        writer = McpServers(BASE, lambda: services, caller=lambda context: EVERYTHING)
        reader = McpServers(BASE, lambda: services, caller=lambda context: READ_EVERYTHING)
        added = asyncio.run(writer.add_document(CURIE, "curie", None))  # type: ignore[arg-type]  # no context needed
        assert added["status"] == "ready" and added["facts"] > 0
        (found,) = asyncio.run(reader.search_documents("Sorbonne", None, k=1))["passages"]  # type: ignore[arg-type]
        assert (found["rank"], found["title"]) == (1, "curie") and 0 < found["similarity"] <= 1
        with pytest.raises(Refused, match="the bearer token may not change collection"):  # (a ToolError once a tool)
            asyncio.run(reader.add_document("x", "x", None))  # type: ignore[arg-type]
        assert set(mcp_servers.READ_TOOLS) == READ_TOOLS and set(mcp_servers.WRITE_TOOLS) == {"add_document"}
        assert READ_TOOLS | {"add_document"} == {
            name for name in vars(McpServers) if not name.startswith("_") and callable(getattr(McpServers, name))
        }  # every public method is a tool, and every tool a method
    finally:
        services.close()
        store.close()


def test_ask_takes_the_routes_options(server: LiveServer) -> None:
    """MCP `ask` honours every option the HTTP route does, checked by the same models (issue 53)."""
    question = "Where was Marie Curie born?"

    async def answered(client: Client) -> list[CallToolResult]:
        return [
            await client.call_tool("ask", {"question": question, "options": {"k": 1, "bridges": 0}}),
            await client.call_tool(
                "ask", {"question": question, "mode": "pagerank", "options": {"edge_limit": 1, "max_path_length": 1}}
            ),
            await client.call_tool("ask", {"question": question, "mode": "document", "options": {"k": 1}}),
        ]

    async def refused(client: Client) -> list[CallToolResult]:
        return [
            await client.call_tool("ask", {"question": question, "options": {"k": 0}}),
            await client.call_tool("ask", {"question": question, "options": {"hops": 2}}),
            await client.call_tool("ask", {"question": question, "mode": "document", "options": {"bridges": 1}}),
            await client.call_tool("ask", {"question": question, "options": {"question": "Who is Ada?"}}),
            await client.call_tool("ask", {"question": question, "options": {"collection": "finance"}}),
            await client.call_tool("ask", {"question": question, "options": ["k", 1]}),
        ]

    one, pagerank, document = _over_http(server, ADMIN, answered)
    assert len(_result(one)["sources"]) == 1 and len(_result(one)["facts"]) > 1
    assert len(_result(pagerank)["facts"]) == 1  # edge_limit 1, one hop: the walk's best fact alone
    assert len(_result(document)["sources"]) == 1
    with server.client(ADMIN) as client:
        http = client.post("/api/v1/graph-rag", json={"question": question, "k": 1, "bridges": 0}).json()
    assert [s["chunk"] for s in _result(one)["sources"]] == [s["chunk"] for s in http["sources"]]
    before = server.dataset(ADMIN)
    texts = [_error(called) for called in _over_http(server, ADMIN, refused)]
    assert "k must be an integer from 1" in texts[0] and "hops is not one of this request's fields" in texts[1]
    assert "bridges is not one of this request's fields" in texts[2]  # Document RAG has no bridges
    assert "question is not one of this request's fields" in texts[3]  # options are options, nothing else
    assert "collection is not one of this request's fields" in texts[4]
    assert "bad_request" in texts[5] and "'k'" not in texts[5]  # not an object: refused, the value not repeated
    assert server.dataset(ADMIN) == before  # a refused question writes no trace
