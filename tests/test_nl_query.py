"""NL -> SPARQL: the real anthropic client against the Messages API stub writes the query, the
server checks it (rdflib's SPARQL parser) and runs it on the real store, over real HTTP."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparqlrag.queries.nl_query import QueryRejected, check_query
from tests.conftest import SPARQLRAG, TEST_DATA, LiveServer, start_server
from tests.llm_stub import MessagesStub, Reply, serve_stub

ORG, FOAF = "http://www.w3.org/ns/org#", "http://xmlns.com/foaf/0.1/"
BASE = "http://kb.example/"
ALLOWED = {ORG + "memberOf", ORG + "Organization", FOAF + "Agent"}


def test_only_queries_on_the_ontology_pass() -> None:
    assert (
        check_query(f"SELECT ?p WHERE {{ ?p <{ORG}memberOf> ?o . ?o a <{ORG}Organization> }}", ALLOWED, BASE)
        == "select"
    )
    assert check_query(f"PREFIX org: <{ORG}> ASK {{ <{BASE}id/hr/x> org:memberOf ?o }}", ALLOWED, BASE) == "ask"
    assert (
        check_query(
            f"CONSTRUCT {{ ?p <{ORG}memberOf> ?o }} WHERE {{ ?p <{ORG}memberOf> ?o ; rdfs:label ?l }}".replace(
                "CONSTRUCT", "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> CONSTRUCT"
            ),
            ALLOWED,
            BASE,
        )
        == "construct"
    )
    refused = {
        "INSERT DATA { <http://ex/a> <http://ex/b> <http://ex/c> }": "an update",
        "DELETE WHERE { ?s ?p ?o }": "an update",
        f"DESCRIBE <{BASE}id/hr/x>": "only SELECT, ASK and CONSTRUCT",
        f"SELECT ?p WHERE {{ ?p <{ORG}headOfEverything> ?o }}": f"does not define: {ORG}headOfEverything",
        "SELECT ?x WHERE { ?x <http://evil.example/p> ?y }": "http://evil.example/p",
        "SELECT ?x WHERE { ?x": "does not parse",
    }
    for query, reason in refused.items():
        with pytest.raises(QueryRejected, match=reason) as caught:
            check_query(query, ALLOWED, BASE)
        assert caught.value.query == query


@pytest.fixture(scope="module")
def stub() -> Iterator[MessagesStub]:
    stub, stop = serve_stub()
    yield stub
    stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, stub: MessagesStub) -> Iterator[LiveServer]:
    live, stop = start_server(
        tmp_path_factory.mktemp("nl"), base_iri=BASE, llm="anthropic", llm_base_url=stub.url, llm_api_key="sk-test"
    )
    with live.client() as client:
        assert (
            client.put(
                "/api/v1/ontologies/org",
                content=(TEST_DATA / "ontologies/org.ttl").read_bytes(),
                headers={"Content-Type": "text/turtle"},
            ).status_code
            == 201
        )
        assert client.post("/api/v1/collections", json={"name": "hr", "ontology": "org"}).status_code == 201
        jane, acme = f"<{BASE}id/hr/org/Agent/jane-smith>", f"<{BASE}id/hr/org/FormalOrganization/acme>"
        update = f"""INSERT DATA {{ GRAPH <{BASE}graph/hr> {{ {jane} a <{FOAF}Agent> ;
            <http://www.w3.org/2000/01/rdf-schema#label> "Jane Smith" ;
            <{ORG}memberOf> {acme} . {acme} a <{ORG}FormalOrganization> ;
              <http://www.w3.org/2000/01/rdf-schema#label> "ACME" }} }}"""
        assert (
            client.post("/sparql", content=update, headers={"Content-Type": "application/sparql-update"}).status_code
            == 204
        )
    yield live
    stop()


def test_a_question_becomes_a_checked_query_with_results(server: LiveServer, stub: MessagesStub) -> None:
    query = (
        f"PREFIX org: <{ORG}>\nPREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"
        f'SELECT ?name WHERE {{ GRAPH <{BASE}graph/hr> {{ ?p org:memberOf ?o . ?o rdfs:label "ACME" . ?p rdfs:label '
        f"?name }} }}"
    )
    stub.script(Reply(f"Here it is:\n```sparql\n{query}\n```"))
    with server.client() as client:
        response = client.post("/api/v1/nl-query", json={"question": "Who is a member of ACME?", "collection": "hr"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["query"] == query and body["form"] == "select" and body["ontology"] == "org"
    assert [b["name"]["value"] for b in body["results"]["results"]["bindings"]] == ["Jane Smith"]
    prompt = stub.requests[-1]["messages"][0]["content"]
    assert (
        "Who is a member of ACME?" in prompt
        and f"<{BASE}graph/hr>" in prompt
        and f"- {ORG}memberOf (member of)" in prompt
    )


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("```sparql\nDELETE WHERE { ?s ?p ?o }\n```", "an update"),
        (f"```sparql\nSELECT ?x WHERE {{ ?x <{ORG}employs> ?y }}\n```", "does not define"),
    ],
)
def test_a_generated_update_or_unknown_predicate_is_refused_and_never_runs(
    server: LiveServer, stub: MessagesStub, reply: str, reason: str
) -> None:
    before = server.dataset()
    stub.script(Reply(reply))
    with server.client() as client:
        # a question of its own: answers are cached by prompt
        response = client.post("/api/v1/nl-query", json={"question": f"What does {reason} do?", "collection": "hr"})
    assert response.status_code == 422 and response.json()["error"] == "query_rejected"
    assert reason in response.json()["detail"] and response.json()["query"] in reply
    assert server.dataset() == before


def test_bad_requests_are_4xx(server: LiveServer) -> None:
    before = server.dataset()
    with server.client() as client:
        cases = [
            (client.post("/api/v1/nl-query", json={"question": ""}), 400, "bad_request"),
            (client.post("/api/v1/nl-query", json={"question": "x" * 3000}), 400, "question_too_long"),
            (
                client.post("/api/v1/nl-query", json={"question": "Who?", "ontology": "nothing"}),
                400,
                "unknown_ontology",
            ),
            (
                client.post("/api/v1/nl-query", json={"question": "Who?", "collection": "nowhere"}),
                404,
                "collection_not_found",
            ),
            (client.post("/api/v1/nl-query", json={"question": "Who?", "limit": 3}), 400, "bad_request"),
            (client.post("/api/v1/nl-query", content=b"[1]"), 400, "bad_request"),
        ]
        for response, status, error in cases:
            assert (response.status_code, response.json()["error"]) == (status, error), response.text
    assert server.dataset() == before


def test_a_failing_model_is_a_502_that_says_why(server: LiveServer, stub: MessagesStub) -> None:
    stub.script(Reply(status=401, error_type="authentication_error"))  # not retried: a key problem
    with server.client() as client:
        response = client.post("/api/v1/nl-query", json={"question": "Which units does ACME have?", "collection": "hr"})
    assert response.status_code == 502 and response.json()["error"] == "model_failed"


def test_offline_it_is_501_and_a_cli_error(tmp_path: Path) -> None:
    live, stop = start_server(tmp_path / "server")
    try:
        with live.client() as client:
            response = client.post("/api/v1/nl-query", json={"question": "Who is a member of ACME?"})
        assert response.status_code == 501 and "need an LLM" in response.json()["detail"]
    finally:
        stop()
    made = subprocess.run([SPARQLRAG, "update", "", "--data-dir", str(tmp_path / "cli")], capture_output=True)
    assert made.returncode == 0  # (a data directory: `nl-query` refuses a folder with no data first)
    run = subprocess.run(
        [SPARQLRAG, "nl-query", "Who is a member of ACME?", "--data-dir", str(tmp_path / "cli")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "need an LLM" in run.stderr and "Traceback" not in run.stderr
