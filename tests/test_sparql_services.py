"""Retrieval inside SPARQL: sr:documentRag and sr:graphRag evaluated inside queries sent to
/sparql, their own endpoints for another engine's SERVICE, and questions scoped to documents
on every surface; over real HTTP on a real store."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
import rdflib

from sparqlrag.operations.access import EVERYTHING
from sparqlrag.server.mcp_servers import McpServers
from sparqlrag.server.state import app_state
from tests.conftest import LiveServer, listening_socket, start_server

DOCS = {  # the unscoped top 2 for "wind farm funding" are the wind documents: never harbour or bakery
    "wind-a": "Wind farm funding: the Kvitoy Wind Farm received funding from the Nordic Energy Fund.",
    "wind-b": "Wind farm funding rose again. Wind farm investors such as Arctic Capital fund wind farms.",
    "wind-c": "More wind farm funding news: the Nordic Energy Fund pays for new wind farms.",
    "harbour": "Harbour notes 2025. Anna Berg chairs the Harbour Board. The Harbour Board gave a grant to Quay Bakery. "
    "The Nordic Energy Fund advised the Harbour Board.",  # (an entity the wind documents name too)
    "bakery": "Ole Hansen owns Quay Bakery. Ole Hansen asked the Town Council for a grant for Quay Bakery.",
}
TITLES = {"harbour": "Harbour notes 2025", "bakery": "Bakery diary"}
PREFIXES = """PREFIX sr: <https://w3id.org/sparqlrag/ns#>
PREFIX dcterms: <http://purl.org/dc/terms/>
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
"""
META = "http://example.org/meta"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live, stop = start_server(tmp_path_factory.mktemp("services"), own_base_iri=True)
    with live.client() as client:
        for document_id, text in DOCS.items():
            body = {"id": document_id, "text": text, "title": TITLES.get(document_id, document_id)}
            assert client.post("/api/v1/documents", json=body).status_code == 201
        dates = " ".join(
            f'<{_doc(live, d)}> dcterms:created "{year}-05-01"^^xsd:date .'
            for d, year in (("harbour", 2025), ("bakery", 2025), ("wind-a", 2024), ("wind-b", 2024), ("wind-c", 2023))
        )
        update = f"{PREFIXES} INSERT DATA {{ GRAPH <{META}> {{ {dates} }} }}"
        assert client.post("/sparql", data={"update": update}).status_code == 204
    yield live
    stop()


def _doc(server: LiveServer, document_id: str, collection: str = "default") -> str:
    return f"{server.settings.base_iri}doc/{collection}/{document_id}"


def _select(client: httpx.Client, query: str, path: str = "/sparql", **params: str) -> list[dict[str, str]]:
    response = client.post(
        path, data={"query": PREFIXES + query, **params}, headers={"Accept": "application/sparql-results+json"}
    )
    assert response.status_code == 200, response.text
    return [{name: value["value"] for name, value in row.items()} for row in response.json()["results"]["bindings"]]


def _search(scope: str = "", k: int = 2, extra: str = "") -> str:
    return f"""SELECT DISTINCT ?chunk ?doc ?rank ?score ?title WHERE {{
      SERVICE sr:documentRag {{
        ?hit sr:question "wind farm funding" ; sr:k {k} ; {extra}
             sr:chunk ?chunk ; sr:score ?score ; sr:rank ?rank ; sr:document ?doc .
        {scope}
      }}
      ?doc dcterms:title ?title .
    }} ORDER BY ?rank"""


def _ids(server: LiveServer, rows: list[dict[str, str]]) -> list[str]:
    return [row["doc"].removeprefix(_doc(server, "")) for row in rows]


def test_document_rag_in_a_query_gives_ranked_rows_that_join(client: httpx.Client, server: LiveServer) -> None:
    rows = _select(client, _search())
    assert _ids(server, rows)[:2] and set(_ids(server, rows)) <= {"wind-a", "wind-b", "wind-c"}
    assert [row["rank"] for row in rows] == ["1", "2"]
    assert float(rows[0]["score"]) >= float(rows[1]["score"])
    assert all(row["chunk"].startswith(row["doc"] + "/chunk/") and row["title"] for row in rows)


def test_a_scope_is_a_pre_filter_and_returns_k_of_its_own(client: httpx.Client, server: LiveServer) -> None:
    """Neither document is in the unscoped top 2, and the scope still gives 2."""
    by_title = _select(
        client, _search('VALUES ?title { "Harbour notes 2025" "Bakery diary" } ?doc dcterms:title ?title')
    )
    assert sorted(_ids(server, by_title)) == ["bakery", "harbour"]
    by_id = _select(client, _search(f"VALUES ?doc {{ <{_doc(server, 'harbour')}> <{_doc(server, 'bakery')}> }}"))
    assert sorted(_ids(server, by_id)) == ["bakery", "harbour"]
    one = _select(client, _search('?doc dcterms:title "Harbour notes 2025" .'))
    assert _ids(server, one) == ["harbour"]  # (its only chunk: a scope of one chunk has one to give)


def test_a_scope_by_a_date_in_another_graph(client: httpx.Client, server: LiveServer) -> None:
    rows = _select(client, _search("?doc dcterms:created ?date FILTER(YEAR(?date) = 2025)", k=5))
    assert sorted(_ids(server, rows)) == ["bakery", "harbour"]
    older = _select(client, _search("?doc dcterms:created ?date FILTER(?date < '2025-01-01'^^xsd:date)", k=5))
    assert sorted(_ids(server, older)) == ["wind-a", "wind-b", "wind-c"]


def test_a_scope_joined_through_provenance_picks_chunks(client: httpx.Client, server: LiveServer) -> None:
    """The chunks that state a fact about an entity: the scope binds the sr:chunk variable."""
    named = f"GRAPH <{server.settings.base_iri}graph/default> {{ ?e ?p ?o }} FILTER(CONTAINS(STR(?e), '/id/default/'))"
    entity = _select(client, f"SELECT ?e WHERE {{ {named} FILTER(CONTAINS(LCASE(STR(?e)), 'hansen')) }} LIMIT 1")
    assert entity, "the offline extractor names Ole Hansen"
    scope = f"?st rdf:reifies <<( <{entity[0]['e']}> ?p ?o )>> ; prov:wasDerivedFrom ?chunk ."
    rows = _select(client, _search(scope, k=5))
    assert _ids(server, rows) == ["bakery"]


def test_graph_rag_in_a_query_gives_a_row_per_source_and_a_trace(client: httpx.Client, server: LiveServer) -> None:
    rows = _select(
        client,
        """SELECT ?answer ?trace ?source ?rank ?fact WHERE {
          SERVICE sr:graphRag { ?a sr:question "Who received funding from the Nordic Energy Fund?" ;
                                   sr:answer ?answer ; sr:trace ?trace ; sr:source ?source ; sr:rank ?rank }
          OPTIONAL { GRAPH ?g { ?trace sr:selectedEdge/sr:fact ?fact } }
        } ORDER BY ?rank""",
    )
    assert rows and len({row["trace"] for row in rows}) == 1 and len({row["answer"] for row in rows}) == 1
    assert rows[0]["rank"] == "1" and "source" in rows[0]
    assert any("fact" in row for row in rows), "the trace exists before the rest of the query reads it"
    trace = rows[0]["trace"]
    page = client.get(trace.removeprefix(server.url), headers={"Accept": "application/json"}, follow_redirects=True)
    assert page.status_code == 200 and rows[0]["answer"] in page.text


@pytest.mark.parametrize(
    ("block", "named"),
    [
        ("?hit sr:k 3 ; sr:chunk ?c", "sr:question"),
        ('?hit sr:question "wind" ; sr:k 1000 ; sr:chunk ?c', "k must be an integer from 1 to 100"),
        ('?hit sr:question "wind" ; sr:colour "blue" ; sr:chunk ?c', "sr:colour"),
        ('?hit sr:question "wind" ; sr:mode "psychic" ; sr:chunk ?c', "mode must be one of vector, keyword, hybrid"),
        ("?hit sr:question ?q ; sr:chunk ?c", "sr:question takes a string literal"),
        ('?hit sr:question "wind" ; sr:chunk "x"', "sr:chunk takes a variable"),
        ('?hit sr:question "wind" ; sr:chunk ?c ; sr:rank ?c', "binds ?c twice"),
        ('?hit sr:question "wind" ; sr:chunk ?c . ?doc sr:question "again"', "asks 2 questions"),
        ('?hit sr:question "wind" ; sr:chunk ?c . ?other ?p ?o', "must use the variable of sr:chunk or sr:document"),
    ],
)
def test_a_bad_service_block_is_a_400_naming_it(
    client: httpx.Client, server: LiveServer, block: str, named: str
) -> None:
    before = server.dataset()
    response = client.post(
        "/sparql", data={"query": f"{PREFIXES} SELECT * WHERE {{ SERVICE sr:documentRag {{ {block} }} }}"}
    )
    assert response.status_code == 400 and named in response.json()["detail"], response.text
    assert response.json()["error"] == "bad_service_call"
    assert server.dataset() == before


def test_the_services_only_read_an_update_cannot_call_them(client: httpx.Client, server: LiveServer) -> None:
    before = server.dataset()
    update = (
        PREFIXES + "INSERT { GRAPH <urn:copied> { ?c a sr:Hit } } WHERE { SERVICE sr:documentRag { "
        '?h sr:question "wind farm funding" ; sr:chunk ?c } }'
    )
    response = client.post("/sparql", data={"update": update})
    assert response.status_code == 403 and response.json()["error"] == "remote_access_refused"
    assert server.dataset() == before


def test_our_own_endpoint_named_in_a_service_is_evaluated_here(client: httpx.Client, server: LiveServer) -> None:
    """Remote SERVICE stays refused (remote access is off), but our own endpoint is not remote."""
    rows = _select(
        client,
        f"""SELECT ?chunk WHERE {{ SERVICE <{server.url}/sparql/document-rag> {{
              ?h sr:question "wind farm funding" ; sr:k 1 ; sr:chunk ?chunk }} }}""",
    )
    assert len(rows) == 1
    refused = client.post(
        "/sparql", data={"query": "SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }"}
    )
    assert refused.status_code == 403 and refused.json()["error"] == "remote_access_refused"


def test_rdflib_federates_with_the_document_rag_endpoint(server: LiveServer) -> None:
    """rdflib's own SERVICE evaluation sends the block to /sparql/document-rag and joins the rows."""
    local = rdflib.Graph()
    local.add((rdflib.URIRef(_doc(server, "harbour")), rdflib.RDFS.label, rdflib.Literal("chosen")))
    rows = local.query(
        PREFIXES
        + f"""PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
        SELECT ?chunk ?doc ?label WHERE {{
          SERVICE <{server.url}/sparql/document-rag> {{
            ?hit sr:question "wind farm funding" ; sr:k 5 ; sr:chunk ?chunk ; sr:document ?doc .
          }}
          ?doc rdfs:label ?label .
        }}"""
    )
    found = [(str(row.chunk), str(row.doc), str(row.label)) for row in rows]  # type: ignore[union-attr]
    assert found and all(doc == _doc(server, "harbour") and label == "chosen" for _, doc, label in found)


def test_the_service_endpoints_refuse_what_is_not_a_query(client: httpx.Client) -> None:
    assert client.get("/sparql/document-rag").status_code == 400
    update = client.post("/sparql/graph-rag", data={"update": "INSERT DATA { <a:b> <a:c> <a:d> }"})
    assert update.status_code == 400 and "updates go to /sparql" in update.json()["detail"]


def test_routes_mcp_and_traces_take_a_scope(client: httpx.Client, server: LiveServer) -> None:
    asked = {"question": "wind farm funding", "k": 2, "documents": ["harbour", "bakery"]}
    answer = client.post("/api/v1/document-rag", json=asked).json()
    assert sorted(s["document"] for s in answer["sources"]) == sorted(_doc(server, d) for d in ("harbour", "bakery"))
    trace = client.get(f"/api/v1/traces/{answer['trace'].rsplit('/', 1)[1]}").json()
    assert trace["scope"]["chunks"] == 2 and len(trace["scope"]["documents"]) == 2
    by_pattern = {"question": "wind farm funding", "scope": '?document dcterms:title "Bakery diary"'}
    sources = client.post("/api/v1/document-rag", json=by_pattern).json()["sources"]
    assert [s["document"] for s in sources] == [_doc(server, "bakery")]
    missing = client.post("/api/v1/document-rag", json={"question": "x", "documents": ["nope"]})
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]
    unbound = client.post("/api/v1/document-rag", json={"question": "x", "scope": "?d ?p ?o"})
    assert unbound.status_code == 400 and "?document" in unbound.json()["detail"]
    servers = McpServers(server.settings.base_iri, lambda: app_state(server.app).services, lambda context: EVERYTHING)
    found = asyncio.run(servers.search_documents("wind farm funding", None, documents=["harbour"]))  # type: ignore[arg-type]
    assert [p["document"] for p in found["passages"]] == [_doc(server, "harbour")]
    told = asyncio.run(servers.ask("wind farm funding", None, mode="document", documents=["bakery"]))  # type: ignore[arg-type]
    assert [source["document"] for source in told["sources"]] == [_doc(server, "bakery")]


@pytest.mark.parametrize("mode", ["evidence", "pagerank", "graph", "hybrid"])
def test_a_scoped_graph_answer_stays_in_its_documents(client: httpx.Client, server: LiveServer, mode: str) -> None:
    """Seeds, the walk's facts and the sources all come from the scope's documents."""
    question = {"question": "Who received funding from the Nordic Energy Fund?", "mode": mode}
    unscoped = client.post("/api/v1/graph-rag", json=question).json()
    assert any("wind" in s["document"] for s in unscoped["sources"]), "the scope is what keeps the answer out"
    asked = question | {"documents": ["bakery", "harbour"]}
    stated = _select(
        client,
        f"""SELECT DISTINCT ?s ?o WHERE {{ VALUES ?doc {{ <{_doc(server, "bakery")}> <{_doc(server, "harbour")}> }}
          ?c prov:wasDerivedFrom ?doc . ?st prov:wasDerivedFrom ?c ; rdf:reifies <<( ?s ?p ?o )>> }}""",
    )
    entities = {row[end] for row in stated for end in ("s", "o")}
    response = client.post("/api/v1/graph-rag", json=asked)
    assert response.status_code == 200, response.text
    answer = response.json()
    scope = {_doc(server, "bakery"), _doc(server, "harbour")}
    assert answer["sources"] and {s["document"] for s in answer["sources"]} <= scope
    assert answer["edges"] and all(  # every fact the walk kept was read from the scope's chunks
        e["chunks"] and all(chunk.rsplit("/chunk/", 1)[0] in scope for chunk in e["chunks"]) for e in answer["edges"]
    )
    assert all(seed["entity"] in entities for seed in answer["seeds"])
    trace = client.get(f"/api/v1/traces/{answer['trace'].rsplit('/', 1)[1]}").json()
    assert trace["scope"]["chunks"] == 2


def _limited(server: LiveServer, token: str, query: str) -> httpx.Response:
    with server.client(token) as client:
        return client.post(
            "/sparql", data={"query": PREFIXES + query}, headers={"Accept": "application/sparql-results+json"}
        )


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live, stop = start_server(
        tmp_path_factory.mktemp("services-guarded"),
        write_tokens=["admin"],
        collection_tokens={"alpha-reader": ["read:alpha"], "alpha-asker": ["read:alpha"]},
        answer_rate=3,
    )
    with live.client("admin") as client:
        for name, text in (
            ("alpha", "Alpha notes about wind farm funding."),
            ("beta", "Beta secrets about wind farm funding."),
        ):
            assert client.post("/api/v1/collections", json={"name": name}).status_code == 201
            body = {"id": f"{name}-doc", "text": text, "title": f"{name} title"}
            assert client.post(f"/api/v1/documents?collection={name}", json=body).status_code == 201
    yield live
    stop()


def test_a_limited_token_scoping_into_another_collection_gets_nothing_of_it(guarded: LiveServer) -> None:
    beta = f"{guarded.settings.base_iri}doc/beta/beta-doc"
    mine = _limited(guarded, "alpha-reader", _search(f"VALUES ?doc {{ <{beta}> }}", extra='sr:collection "alpha" ;'))
    assert mine.status_code == 200 and mine.json()["results"]["bindings"] == []
    titled = _limited(
        guarded, "alpha-reader", _search('?doc dcterms:title "beta title"', extra='sr:collection "alpha" ;')
    )
    assert titled.status_code == 200 and titled.json()["results"]["bindings"] == []
    theirs = _limited(guarded, "alpha-reader", _search(extra='sr:collection "beta" ;'))
    assert theirs.status_code == 403 and "beta" not in theirs.text.replace("'beta'", "")
    other = _limited(guarded, "alpha-reader", "SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }")
    assert other.status_code == 403


def test_a_question_through_sparql_counts_against_the_answer_rate(guarded: LiveServer) -> None:
    statuses = [
        _limited(guarded, "alpha-asker", _search(extra='sr:collection "alpha" ;')).status_code for _ in range(4)
    ]
    assert statuses == [200, 200, 200, 429]


def test_a_scope_that_takes_too_long_ends_at_the_query_deadline(client: httpx.Client) -> None:
    slow = (
        "?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?doc ?m ?n FILTER(STRLEN(CONCAT(STR(?c), STR(?f), STR(?i))) < 0)"
    )
    response = client.post("/sparql", data={"query": PREFIXES + _search(slow), "timeout": "0.5"})
    assert response.status_code == 503 and response.json()["error"] == "query_timeout"


def test_a_scope_that_reaches_out_is_refused_and_contacts_nothing(client: httpx.Client, server: LiveServer) -> None:
    """A scope is evaluated as the caller's query: a SERVICE to elsewhere in it is refused (remote
    access is off) on the route and in a block, nothing is fetched, and the store is unchanged."""
    with listening_socket() as listener:
        listener.listen()
        listener.settimeout(0.5)
        remote = f"http://127.0.0.1:{listener.getsockname()[1]}/sparql"
        before = server.dataset()
        scope = f"SERVICE <{remote}> {{ ?document ?p ?o }}"
        routed = client.post("/api/v1/document-rag", json={"question": "wind farm funding", "scope": scope})
        queried = client.post("/sparql", data={"query": PREFIXES + _search(f"SERVICE <{remote}> {{ ?doc ?p ?o }}")})
        nested = client.post(
            "/sparql", data={"query": PREFIXES + _search("SERVICE sr:documentRag { ?h sr:question 'x' }")}
        )
        with pytest.raises(TimeoutError):
            listener.accept()  # no connection was ever made
    assert routed.status_code == 403 and routed.json()["error"] == "remote_access_refused"
    assert queried.status_code == 403 and queried.json()["error"] == "remote_access_refused"
    assert nested.status_code == 400 and "holds another" in nested.json()["detail"]
    assert server.dataset() == before
