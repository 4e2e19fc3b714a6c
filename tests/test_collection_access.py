"""Collection-limited tokens (`read:finance`, `write:finance`): every route that takes a
collection serves the allowed one and refuses the other with 403, leaving the store as it was;
SPARQL and the Graph Store see and change the allowed collection's graphs alone."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import pytest
from pydantic import ValidationError
from starlette.routing import Mount, Route

from sparqlrag.config import Settings
from sparqlrag.operations.access import check_grants, parse_grants
from sparqlrag.store.vocab import collection_of_graph
from tests.conftest import LiveServer, start_server

ADMIN, FIN_READ, FIN_WRITE = "admin-token", "finance-reader", "finance-writer"
GRANTS = {FIN_READ: ["read:finance"], FIN_WRITE: ["write:finance", "write:finance-scratch"]}
TEXTS = {
    "finance": "Acme Bank lends money to traders in Oslo. Acme Bank was founded by Ole Berg.",
    "hr": "Mary Smith manages payroll in Bergen. Mary Smith hired Tom Lund in 2020.",
}
SPARQL_RESULTS = {"Accept": "application/sparql-results+json"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live, stop = start_server(
        tmp_path_factory.mktemp("access"), write_tokens=[ADMIN], collection_tokens=GRANTS, answer_rate=0
    )
    with live.client(ADMIN) as admin:
        for name, text in TEXTS.items():
            assert admin.post("/api/v1/collections", json={"name": name}).status_code == 201
            made = admin.post(f"/api/v1/documents?collection={name}", json={"id": "d1", "text": text})
            assert made.status_code == 201, made.text
            asked = admin.post("/api/v1/graph-rag", json={"question": "Who is named?", "collection": name})
            assert asked.status_code == 200, asked.text  # a trace to read
    yield live
    stop()


def _trace_id(server: LiveServer, collection: str) -> str:
    with server.client(ADMIN) as admin:
        return str(admin.get(f"/api/v1/traces?collection={collection}").json()["traces"][0]["id"])


def _graph(server: LiveServer, collection: str, suffix: str = "") -> str:
    return f"{server.settings.base_iri}graph/{collection}{suffix}"


def _reads(server: LiveServer, c: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, request keywords) reading collection `c`."""
    trace = _trace_id(server, c)
    entity = "acme-bank" if c == "finance" else "mary-smith"
    base = server.settings.base_iri
    with server.client(ADMIN) as admin:  # a reifier of one of its facts
        (statement,) = _select(
            admin,
            f"SELECT ?st WHERE {{ GRAPH <{_graph(server, c, '/source')}> {{ ?st "
            "<http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> ?t } } LIMIT 1",
        )
        subject, predicate, obj = _select(  # a fact between two things, as the explorer draws it
            admin,
            f"SELECT ?s ?p ?o WHERE {{ GRAPH <{_graph(server, c)}> {{ ?s ?p ?o }} "
            f'FILTER(isIRI(?o) && STRSTARTS(STR(?p), "{server.settings.base_iri}rel/")) }} LIMIT 1',
        )
    fact = urlencode({"subject": subject, "predicate": predicate, "object": obj})
    return [
        ("GET", f"/api/v1/collections/{c}", {}),
        ("GET", f"/api/v1/collections/{c}/core", {}),
        ("GET", f"/api/v1/collections/{c}/entities/aliases?entity=x", {}),
        ("GET", f"/api/v1/collections/{c}/entities?search=who", {}),
        ("GET", f"/api/v1/collections/{c}/graph?" + urlencode({"entity": f"{base}id/{c}/{entity}"}), {}),
        ("GET", f"/api/v1/collections/{c}/graph/fact?{fact}", {}),
        ("GET", f"/api/v1/documents?collection={c}", {}),
        ("GET", f"/api/v1/documents/d1?collection={c}", {}),
        ("POST", "/api/v1/document-rag", {"json": {"question": "Who?", "collection": c}}),
        ("POST", "/api/v1/graph-rag", {"json": {"question": "Who?", "collection": c}}),
        ("GET", f"/api/v1/traces?collection={c}", {}),
        ("GET", f"/api/v1/traces/{trace}?collection={c}", {}),
        ("GET", f"/trace/{c}/{trace}", {}),
        ("GET", f"/page/trace/{c}/{trace}", {}),
        ("GET", f"/data/trace/{c}/{trace}.ttl", {}),
        ("GET", "/" + statement.removeprefix(server.settings.base_iri), {}),
        ("GET", "/data/" + statement.removeprefix(server.settings.base_iri) + ".ttl", {}),
        ("GET", f"/id/{c}/{entity}", {}),
        ("GET", f"/page/id/{c}/{entity}", {}),
        ("GET", f"/data/id/{c}/{entity}.ttl", {}),
        ("GET", f"/doc/{c}/d1", {}),
        ("GET", f"/file/doc/{c}/d1", {}),
        ("GET", f"/store?graph={quote(_graph(server, c), safe='')}", {}),
    ]


def _writes(server: LiveServer, c: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, request keywords) changing collection `c` (in an order that can run)."""
    nt = {
        "content": "<http://ex/a> <http://ex/b> <http://ex/c> .\n",
        "headers": {"Content-Type": "application/n-triples"},
    }
    return [
        ("POST", "/api/v1/collections", {"json": {"name": c}}),
        ("POST", f"/api/v1/documents?collection={c}", {"json": {"id": "d2", "text": "Ada Byron wrote notes."}}),
        ("POST", f"/api/v1/documents/d2/reingest?collection={c}", {}),
        ("POST", f"/api/v1/collections/{c}/entities/split", {"json": {"entity": "ada-byron", "alias": "x"}}),
        ("POST", f"/api/v1/collections/{c}/entities/merge", {"json": {"entity": "ada-byron", "other": "x"}}),
        ("DELETE", f"/api/v1/documents/d2?collection={c}", {}),
        ("PUT", f"/store?graph={quote(_graph(server, c, '/extra'), safe='')}", nt),
        ("POST", f"/store?graph={quote(_graph(server, c, '/extra'), safe='')}", nt),
        ("DELETE", f"/store?graph={quote(_graph(server, c, '/extra'), safe='')}", {}),
        ("DELETE", f"/api/v1/collections/{c}", {}),
    ]


def _relation_of_only(server: LiveServer, collection: str) -> str:
    """The path (`rel/...`) of a relation that facts of `collection` use and no other's do."""
    rel = f"{server.settings.base_iri}rel/"
    query = f"""SELECT DISTINCT ?p WHERE {{ GRAPH <{_graph(server, collection)}> {{ ?s ?p ?o }}
        FILTER(STRSTARTS(STR(?p), "{rel}"))
        FILTER NOT EXISTS {{ GRAPH ?g {{ ?x ?p ?y }} FILTER(?g != <{_graph(server, collection)}>) }} }}"""
    with server.client(ADMIN) as admin:
        found = _select(admin, query)
    assert found, "the collection's text mints a relation of its own"
    return found[0].removeprefix(server.settings.base_iri)


def _wrong(response: httpx.Response) -> bool:
    return response.status_code in (401, 403) or response.status_code >= 500


def test_a_read_grant_reads_its_collection_and_nothing_else(server: LiveServer) -> None:
    with server.client(FIN_READ) as reader:
        for method, path, kwargs in _reads(server, "finance"):
            allowed = reader.request(method, path, **kwargs)
            assert not _wrong(allowed), (method, path, allowed.status_code, allowed.text[:300])
        before = server.dataset(ADMIN)
        for method, path, kwargs in _reads(server, "hr"):
            refused = reader.request(method, path, **kwargs)
            assert refused.status_code == 403 and refused.json()["error"] == "forbidden", (method, path, refused.text)
            assert "Mary" not in refused.text
        assert server.dataset(ADMIN) == before  # refused answers wrote no trace either
        relation = _relation_of_only(server, "hr")
        with server.client(ADMIN) as admin:
            assert admin.get(f"/data/{relation}.ttl").status_code == 200
        assert reader.get(f"/data/{relation}.ttl").status_code == 404  # its facts are all hr's
        assert reader.get(f"/{relation}").status_code == 404
        listed = reader.get("/api/v1/collections").json()["collections"]
        assert [c["name"] for c in listed] == ["finance"]
        assert reader.get("/api/v1/ontologies").status_code == 200  # shared schema, no collection's data
        for method, path, kwargs in _writes(server, "finance"):
            refused = reader.request(method, path, **kwargs)
            assert refused.status_code == 403, (method, path, refused.text)
        assert server.dataset(ADMIN) == before


def test_a_write_grant_writes_its_collections_and_nothing_else(server: LiveServer) -> None:
    with server.client(FIN_WRITE) as writer:
        before = server.dataset(ADMIN)
        for method, path, kwargs in _writes(server, "hr"):
            refused = writer.request(method, path, **kwargs)
            assert refused.status_code == 403, (method, path, refused.text)
        assert server.dataset(ADMIN) == before
        for method, path, kwargs in _writes(server, "finance-scratch"):
            allowed = writer.request(method, path, **kwargs)  # past the token check; curation may not find "x"
            assert not _wrong(allowed) and allowed.status_code in (200, 201, 204, 404), (method, path, allowed.text)
        core = writer.get("/api/v1/collections/finance/core")
        assert core.status_code == 200
        imported = writer.post("/api/v1/collections/finance-scratch/core", content=core.content)
        assert imported.status_code == 201 and imported.json()["renamed_from"] == "finance"
        before = server.dataset(ADMIN)
        refused = writer.post("/api/v1/collections/hr2/core", content=core.content)
        assert refused.status_code == 403 and server.dataset(ADMIN) == before


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/store"),  # the whole dataset
        ("GET", "/store?default"),
        ("PUT", "/store?default"),
        ("GET", "/metrics"),
        ("POST", "/api/v1/ontologies?name=tiny"),
        ("DELETE", "/api/v1/ontologies/tiny"),
        ("POST", "/api/v1/nl-query"),
        ("GET", "/store?graph=http%3A%2F%2Fex%2Fg"),  # a graph of no collection
    ],
)
def test_what_belongs_to_no_collection_needs_an_unlimited_token(server: LiveServer, method: str, path: str) -> None:
    before = server.dataset(ADMIN)
    with server.client(FIN_WRITE) as writer:
        refused = writer.request(method, path, content=b"<http://ex/a> <http://ex/b> <http://ex/c> .\n")
    assert refused.status_code == 403, refused.text
    assert server.dataset(ADMIN) == before


# what a limited token may reach on a route that names no collection of its own: nothing of
# another collection's (the pages hold no data; the lists are narrowed; ontologies are shared)
NARROWED = {
    ("GET", "/"),
    ("GET", "/ask"),
    ("GET", "/library"),
    ("GET", "/explore"),
    ("GET", "/static"),
    ("GET", "/healthz"),
    ("GET", "/openapi.json"),
    ("GET", "/sparql"),  # the service description
    ("GET", "/api/v1/collections"),
    ("GET", "/api/v1/ontologies"),
    ("GET", "/api/v1/access"),  # (the token's own reach: its collections' names)
    ("GET", "/v1/models"),  # (the chat models: its collections alone)
    ("GET", "/api/tags"),
}


def test_every_route_refuses_another_collection(server: LiveServer) -> None:
    """Every route of the app with every method, each path parameter naming collection `hr`
    (or its trace, entity, document, graph): a limited token gets no 2xx but where the route is
    narrowed or holds no data, and leaves the store as it was. A route added without its check fails here."""
    trace = _trace_id(server, "hr")
    samples = {"collection": "hr", "name": "hr", "id": trace, "path": "id/hr/mary-smith", "model": "hr"}
    before = server.dataset(ADMIN)
    leaked: list[str] = []
    with server.client(FIN_WRITE) as writer:
        for route in server.app.routes:
            if isinstance(route, Mount):
                continue
            assert isinstance(route, Route)
            path = re.sub(r"\{(\w+)(:path)?\}", lambda m: samples[m.group(1)], route.path)
            for method in sorted(route.methods or ()):
                query = "" if "{" in route.path else "?collection=hr"
                answered = writer.request(method, path + query, json={"question": "Who?", "collection": "hr"})
                narrowed = (method if method != "HEAD" else "GET", route.path) in NARROWED
                if answered.is_success and not narrowed or "Mary" in answered.text or answered.status_code >= 500:
                    leaked.append(f"{method} {path + query}: {answered.status_code}")
    assert leaked == [], leaked
    assert server.dataset(ADMIN) == before


def _select(client: httpx.Client, query: str, **params: str) -> list[str]:
    response = client.get("/sparql", params={"query": query, **params}, headers=SPARQL_RESULTS)
    assert response.status_code == 200, response.text
    values = [v["value"] for row in response.json()["results"]["bindings"] for v in row.values()]
    return [v if isinstance(v, str) else json.dumps(v) for v in values]  # a triple term's value is an object


def test_sparql_sees_only_the_collections_graphs(server: LiveServer) -> None:
    hr, finance = _graph(server, "hr"), _graph(server, "finance")
    with server.client(ADMIN) as admin:
        assert hr in _select(admin, "SELECT DISTINCT ?g WHERE { GRAPH ?g {} }")
    with server.client(FIN_READ) as reader:
        graphs = _select(reader, "SELECT DISTINCT ?g WHERE { GRAPH ?g {} }")
        assert finance in graphs and all(g.startswith(finance) for g in graphs)
        everything = " ".join(_select(reader, "SELECT * WHERE { ?s ?p ?o }"))
        assert "Acme" in everything and "Mary" not in everything
        for escape in (
            f"SELECT * FROM <{hr}> WHERE {{ ?s ?p ?o }}",
            f"SELECT * FROM NAMED <{hr}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}",
            f"SELECT * WHERE {{ GRAPH <{hr}> {{ ?s ?p ?o }} }}",
            f"SELECT * WHERE {{ GRAPH ?g {{ ?s ?p ?o }} FILTER(?g = <{hr}>) }}",
            f"SELECT * WHERE {{ GRAPH <{hr}/source> {{ ?s ?p ?o }} }}",
        ):
            assert not any("Mary" in value or value.startswith(hr) for value in _select(reader, escape)), escape
        for parameter in ("default-graph-uri", "named-graph-uri"):
            refused = reader.get(
                "/sparql", params={"query": "SELECT * WHERE { ?s ?p ?o }", parameter: hr}, headers=SPARQL_RESULTS
            )
            assert refused.status_code == 403, refused.text
        own = _select(reader, "SELECT ?o WHERE { ?s ?p ?o }", **{"default-graph-uri": finance})
        assert any("Acme" in value for value in own)
        service = reader.get(
            "/sparql", params={"query": f"SELECT * WHERE {{ SERVICE <{server.url}/sparql> {{ ?s ?p ?o }} }}"}
        )
        assert service.status_code == 403


def _update(client: httpx.Client, text: str) -> httpx.Response:
    return client.post("/sparql", content=text, headers={"Content-Type": "application/sparql-update"})


def test_sparql_updates_touch_only_the_collections_graphs(server: LiveServer) -> None:
    finance, hr = _graph(server, "finance", "/notes"), _graph(server, "hr")
    with server.client(FIN_WRITE) as writer, server.client(FIN_READ) as reader:
        before = server.dataset(ADMIN)
        for refused_update in (
            f'INSERT DATA {{ GRAPH <{hr}> {{ <http://ex/a> <http://ex/b> "c" }} }}',
            'INSERT DATA { <http://ex/a> <http://ex/b> "in the default graph" . }',
            f'INSERT DATA {{ GRAPH <{finance}> {{ <http://ex/a> <http://ex/b> "c" }} }} ; CLEAR ALL',
            f"DELETE WHERE {{ GRAPH <{hr}> {{ ?s ?p ?o }} }}",
            f"INSERT {{ GRAPH <{finance}> {{ ?s ?p ?o }} }} WHERE {{ GRAPH <{hr}> {{ ?s ?p ?o }} }}",
            f"DROP GRAPH <{hr}>",
            "CLEAR ALL",
            f"LOAD <http://ex/data> INTO GRAPH <{finance}>",
        ):
            refused = _update(writer, refused_update)
            assert refused.status_code in (400, 403), (refused_update, refused.text)
        assert (
            _update(reader, f'INSERT DATA {{ GRAPH <{finance}> {{ <http://ex/a> <http://ex/b> "c" }} }}').status_code
            == 403
        )
        assert server.dataset(ADMIN) == before
        written = _update(
            writer,
            f'PREFIX ex: <http://ex/> INSERT DATA {{ GRAPH <{finance}> {{ ex:a ex:b "kept" ; ex:c "gone" }} }} ;'
            f' DELETE DATA {{ GRAPH <{finance}> {{ ex:a ex:c "gone" }} }}',
        )
        assert written.status_code == 204, written.text
        assert sorted(_select(reader, f"SELECT ?o WHERE {{ GRAPH <{finance}> {{ ?s ?p ?o }} }}")) == ["kept"]


def test_grants_are_checked_when_settings_load() -> None:
    bad_grants: list[dict[str, list[str]]] = [{"t": ["admin:finance"]}, {"t": ["read:"]}, {"t": []}, {" ": ["read:a"]}]
    for grants in bad_grants:
        with pytest.raises(ValidationError):
            Settings(collection_tokens=grants)
    with pytest.raises(ValueError, match="collection names"):
        check_grants(Settings(collection_tokens={"t": ["read:Not A Name"]}))
    with pytest.raises(ValidationError, match="more than one"):
        Settings(read_tokens=["t"], collection_tokens={"t": ["read:a"]})
    assert Settings(collection_tokens=json.loads('{"t": ["read:a"]}')).auth_enabled


def test_a_collections_graphs_end_at_its_name() -> None:
    base = "http://x/"
    assert collection_of_graph(base, "http://x/graph/fin") == "fin"
    assert collection_of_graph(base, "http://x/graph/fin/source") == "fin"
    assert collection_of_graph(base, "http://x/graph/finance") == "finance"
    assert collection_of_graph(base, "http://x/other/fin") is None
    access = parse_grants(["write:fin"])
    assert access.may_graph("write", base, "http://x/graph/fin/notes")
    assert not access.may_graph("write", base, "http://x/graph/finance")
    assert access.may("read", "fin") and not access.may("read", "finance")
