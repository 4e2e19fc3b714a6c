"""`/openapi.json` describes every route, and `/metrics` counts what the server did."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from openapi_schema_validator import OAS31Validator
from openapi_spec_validator import validate
from prometheus_client.parser import text_string_to_metric_families
from starlette.routing import Route

from tests.conftest import LiveServer, start_server
from tests.llm_stub import Reply, serve_stub


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    stub, stop_stub = serve_stub()
    stub.default = Reply('{"entities": [], "relationships": []}')  # every extraction's answer, in any order
    live, stop = start_server(
        tmp_path_factory.mktemp("meta"), llm="anthropic", llm_base_url=stub.url, llm_api_key="sk-test", extractor="llm"
    )
    yield live
    stop()
    stop_stub()


def test_openapi_describes_every_route_and_is_valid(client: httpx.Client, server: LiveServer) -> None:
    document = client.get("/openapi.json").json()
    validate(document)  # OpenAPI 3.1, by the openapi-spec-validator project
    described = {
        (path, method) for path, item in document["paths"].items() for method in item if method != "parameters"
    }
    pages = {"/", "/ask", "/library", "/explore"}  # HTML for people, not API
    for route in server.app.routes:
        if not isinstance(route, Route) or route.path in pages:
            continue
        path = re.sub(r"\{(\w+):path\}", r"{\1}", route.path)
        for method in (route.methods or set()) - {"HEAD"}:
            assert (path, method.lower()) in described, f"{method} {path} is not in /openapi.json"
    body = document["paths"]["/api/v1/graph-rag"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/GraphRagRequest"}  # generated from the route's model
    assert document["components"]["schemas"]["GraphRagRequest"]["properties"]["edge_limit"]["default"] == 25


def test_collections_answer_as_their_schema_says(client: httpx.Client) -> None:
    """schemathesis found `created: null` (the `default` collection's) breaking the schema (issue 18)."""
    document = client.get("/openapi.json").json()
    listing = document["paths"]["/api/v1/collections"]["get"]["responses"]["200"]["content"]["application/json"]
    listed = client.get("/api/v1/collections").json()
    OAS31Validator(listing["schema"]).validate(listed)
    assert {c["name"]: c["created"] for c in listed["collections"]}["default"] is None
    assert "emptied" in document["paths"]["/api/v1/collections/{name}"]["delete"]["summary"]


def test_a_405_names_every_method_of_its_path(client: httpx.Client) -> None:
    """Routes share a path, one per method: the Allow of a 405 listed only the first's (issue 18)."""
    for method, path, allowed in (
        ("PATCH", "/api/v1/documents", "GET, HEAD, POST"),
        ("PUT", "/api/v1/collections/default", "DELETE, GET, HEAD"),
        ("DELETE", "/api/v1/ontologies", "GET, HEAD, POST"),
    ):
        refused = client.request(method, path)
        assert refused.status_code == 405 and refused.headers["allow"] == allowed, (method, path, refused.headers)
        assert refused.json()["error"] == "method_not_allowed"


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus text (0 when absent), read by prometheus_client's parser."""
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and all(found.labels.get(k) == v for k, v in labels.items()):
                return found.value
    return 0.0


def test_metrics_count_requests_sparql_ingest_and_llm_tokens(client: httpx.Client) -> None:
    before = client.get("/metrics").text
    assert client.get("/sparql", params={"query": "ASK {}"}).status_code == 200
    assert client.get("/sparql", params={"query": "SELEC nothing"}).status_code == 400
    assert client.post("/sparql", data={"update": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"}).status_code == 204
    assert (
        client.post(
            "/api/v1/documents", json={"id": "note", "text": "Ada Lovelace wrote the first program."}
        ).status_code
        == 201
    )
    assert client.get("/api/v1/documents/nothing").status_code == 404
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    after = response.text

    def delta(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    assert delta("sparqlrag_sparql_operations_total", kind="query", outcome="ok") == 1
    assert delta("sparqlrag_sparql_operations_total", kind="query", outcome="error") == 1
    assert delta("sparqlrag_sparql_operations_total", kind="update", outcome="ok") == 1
    assert delta("sparqlrag_http_requests_total", method="GET", route="/sparql", status="400") == 1
    assert delta("sparqlrag_http_requests_total", method="GET", route="/api/v1/documents/{id:path}", status="404") == 1
    assert delta("sparqlrag_http_request_duration_seconds_count", method="POST", route="/api/v1/documents") == 1
    assert delta("sparqlrag_ingest_documents_total", outcome="ready") == 1
    assert delta("sparqlrag_ingest_chunks_extracted_total") == 1  # the note is one chunk
    assert sample(after, "sparqlrag_ingest_chunks_pending") == 0
    assert delta("sparqlrag_llm_tokens_total", direction="input") > 0  # what the stub reported for the extraction
    assert delta("sparqlrag_llm_calls_total", outcome="answered") == 2  # definitions, then relationships
