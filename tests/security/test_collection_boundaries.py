"""What a collection's own writer can put in its graphs never reaches another collection or the
server's bookkeeping (issue 35, holes 1-3): the server's graphs are out of every collection
name's reach, registrations are read from the registry alone, labels come from the
collection's own graphs (and the ontologies'), and a graph IRI with dot segments belongs to no
collection. Two collections `alpha` and `beta`, a collection named `ontologies`, an admin
token and collection tokens, on a real server."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import quote

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from sparqlrag.store import vocab
from sparqlrag.store.vocab import NAME_PATTERN, collection_of_graph
from tests.conftest import LiveServer, start_server
from tests.security.conftest import sparql

ADMIN, READER = "admin", "reader"
ALPHA_W, ALPHA_R, ONTO_W = "alpha-writer", "alpha-reader", "ontologies-writer"
GRANTS = {ALPHA_W: ["write:alpha"], ALPHA_R: ["read:alpha"], ONTO_W: ["write:ontologies"]}
TEXTS = {
    "alpha": "Acme Bank lends money to traders in Oslo. Acme Bank was founded by Ole Berg.",
    "beta": "Mary Smith manages payroll in Bergen. Mary Smith hired Tom Lund in 2020.",
}
ONTOLOGY = (
    "@prefix owl: <http://www.w3.org/2002/07/owl#> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
    '<http://ex/onto> a owl:Ontology . <http://ex/Person> a owl:Class ; rdfs:label "Person" .\n'
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live, stop = start_server(
        tmp_path_factory.mktemp("boundaries"),
        write_tokens=[ADMIN],
        read_tokens=[READER],
        collection_tokens=GRANTS,
        answer_rate=0,
    )
    with live.client(ADMIN) as admin:
        for name in ("alpha", "beta", "ontologies"):
            assert admin.post("/api/v1/collections", json={"name": name}).status_code == 201
        for name, text in TEXTS.items():
            made = admin.post(f"/api/v1/documents?collection={name}", json={"id": "d1", "text": text})
            assert made.status_code == 201, made.text
        loaded = admin.post("/api/v1/ontologies?name=people", content=ONTOLOGY, headers={"Content-Type": "text/turtle"})
        assert loaded.status_code == 201, loaded.text
    yield live
    stop()


def _base(server: LiveServer) -> str:
    return server.settings.base_iri


def _insert(server: LiveServer, token: str, graph: str, triples: str) -> None:
    done = sparql(server, token, "update", f"INSERT DATA {{ GRAPH <{graph}> {{ {triples} }} }}")
    assert done.status_code == 204, done.text


def _delete(server: LiveServer, graph: str, triples: str) -> None:
    done = sparql(server, ADMIN, "update", f"DELETE DATA {{ GRAPH <{graph}> {{ {triples} }} }}")
    assert done.status_code == 204, done.text


def test_no_collection_name_reaches_a_server_graph() -> None:
    base = "http://kb.example/"
    for graph in vocab.server_graphs(base):
        assert collection_of_graph(base, graph.value) is None
        first = graph.value.removeprefix(f"{base}graph/").split("/")[0]
        assert not re.fullmatch(NAME_PATTERN, first), graph
    # the names an older version owned a graph under are ordinary collection names now
    assert collection_of_graph(base, f"{base}graph/ontologies") == "ontologies"


def test_a_collection_named_ontologies_cannot_touch_the_ontology_registry(server: LiveServer) -> None:
    base = _base(server)
    beta_graph = f"{base}graph/beta"
    planted = (
        f'<{beta_graph}> a <{vocab.SR}Ontology> ; <{vocab.SR}name> "leak" ; <{vocab.SR}classCount> 1 ; '
        f'<{vocab.SR}propertyCount> 0 ; <{vocab.SR}tripleCount> 1 ; <{vocab.SR}sha256> "x" ; '
        f'<{vocab.DCTERMS}modified> "2026-01-01T00:00:00Z"^^<{vocab.XSD}dateTime>'
    )
    _insert(server, ONTO_W, f"{base}graph/ontologies", planted)
    with server.client(ALPHA_R) as reader:
        listed = reader.get("/api/v1/ontologies")
        assert listed.status_code == 200
        assert [o["name"] for o in listed.json()["ontologies"]] == ["people"]
        assert reader.get("/api/v1/ontologies/leak").status_code == 404
    with server.client(ADMIN) as admin:
        assert admin.delete("/api/v1/ontologies/leak").status_code == 404
        assert admin.get(f"/store?graph={quote(beta_graph, safe='')}").status_code == 200  # beta's graph stays
        # deleting the collection named `ontologies` leaves every ontology registered
        assert admin.delete("/api/v1/collections/ontologies").status_code in (200, 204)
        assert [o["name"] for o in admin.get("/api/v1/ontologies").json()["ontologies"]] == ["people"]
        again = admin.put("/api/v1/ontologies/people", content=ONTOLOGY, headers={"Content-Type": "text/turtle"})
        assert again.status_code in (200, 201), again.text
        assert admin.post("/api/v1/collections", json={"name": "ontologies"}).status_code == 201


def _list_over_mcp(server: LiveServer, token: str) -> list[str]:
    async def session() -> list[str]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
            async with Client(streamable_http_client(server.url + "/mcp", http_client=http)) as client:
                called = await client.call_tool("list_collections", {})
                assert not called.is_error, called.content
                assert called.structured_content is not None
                return [c["name"] for c in called.structured_content["collections"]]

    return anyio.run(session)


def test_a_limited_writer_cannot_register_or_break_collections(server: LiveServer) -> None:
    base = _base(server)
    source = f"{base}graph/alpha/source"
    fakes = (
        f'<urn:fake> a <{vocab.SR}Collection> ; <{vocab.RDFS}label> "Not A Name!" . '
        f'<{base}collection/gamma> a <{vocab.SR}Collection> ; <{vocab.RDFS}label> "gamma" . '
        f'<{base}collection/alpha> <{vocab.SR}usesOntology> "people"'
    )
    _insert(server, ALPHA_W, source, fakes)
    try:
        with server.client(ADMIN) as admin:
            listed = admin.get("/api/v1/collections")
            assert listed.status_code == 200, listed.text
            names = [c["name"] for c in listed.json()["collections"]]
            assert "gamma" not in names and "Not A Name!" not in names and {"alpha", "beta"} <= set(names)
            assert admin.get("/api/v1/collections/gamma").status_code == 404
            assert admin.get("/api/v1/collections/alpha").json()["ontology"] is None
        assert set(_list_over_mcp(server, READER)) == set(names)
        assert _list_over_mcp(server, ALPHA_R) == ["alpha"]
        with server.client(ADMIN) as admin:  # the planted sr:usesOntology does not hold the ontology
            assert admin.delete("/api/v1/ontologies/people").status_code in (200, 204)
            loaded = admin.post(
                "/api/v1/ontologies?name=people", content=ONTOLOGY, headers={"Content-Type": "text/turtle"}
            )
            assert loaded.status_code == 201, loaded.text
    finally:
        _delete(server, source, fakes)


def test_a_bad_value_in_a_collections_own_graph_is_no_500(server: LiveServer) -> None:
    base = _base(server)
    source, document = f"{base}graph/alpha/source", f"{base}doc/alpha/d1"
    planted = f'<{document}> <{vocab.SR}progress> "not a number"'
    _insert(server, ALPHA_W, source, planted)
    try:
        with server.client(ALPHA_R) as reader:
            listed = reader.get("/api/v1/documents?collection=alpha")
            assert listed.status_code == 200, listed.text
            assert reader.get("/api/v1/documents/d1?collection=alpha").status_code == 200
    finally:
        _delete(server, source, planted)


def _entity(server: LiveServer, collection: str, slug: str) -> str:
    return f"{_base(server)}id/{collection}/{slug}"


def test_labels_never_cross_collections(server: LiveServer) -> None:
    base = _base(server)
    mary, acme = _entity(server, "beta", "mary-smith"), _entity(server, "alpha", "acme-bank")
    # alpha's writer names beta's entity in alpha's graph; beta's page must not show it
    planted = f'<{mary}> <{vocab.RDFS}label> "planted-by-alpha"'
    _insert(server, ALPHA_W, f"{base}graph/alpha", planted)
    # an alpha fact pointing at beta's entity: alpha's reader must not learn beta's label for it
    pointer = f"<{acme}> <{base}rel/knows> <{mary}>"
    _insert(server, ALPHA_W, f"{base}graph/alpha", pointer)
    try:
        with server.client(ADMIN) as admin:
            page = admin.get("/page/id/beta/mary-smith")
            assert page.status_code == 200 and "Mary Smith" in page.text
            assert "planted-by-alpha" not in page.text
            data = admin.get("/data/id/beta/mary-smith.nt")
            assert data.status_code == 200 and "planted-by-alpha" not in data.text
        with server.client(ALPHA_R) as reader:
            for path in ("/data/id/alpha/acme-bank.nt", "/page/id/alpha/acme-bank", "/page/rel/knows"):
                shown = reader.get(path)
                assert shown.status_code == 200, (path, shown.text)
                assert "Mary Smith" not in shown.text, path  # beta's label of its own entity
    finally:
        _delete(server, f"{base}graph/alpha", f"{planted} . {pointer}")


@pytest.mark.parametrize("tail", ["alpha/../beta", "alpha/./../beta/source", "alpha/%2E%2E/beta", "alpha/.."])
def test_graph_iris_with_dot_segments_belong_to_no_collection(server: LiveServer, tail: str) -> None:
    base = _base(server)
    graph = f"{base}graph/{tail}"
    before = server.dataset(ADMIN)
    with server.client(ALPHA_W) as writer:
        put = writer.put(
            f"/store?graph={quote(graph, safe='')}",
            content=b'<urn:s> <urn:p> "o" .',
            headers={"Content-Type": "application/n-triples"},
        )
        assert put.status_code == 403, put.text
        read = writer.get("/sparql", params={"query": "ASK { ?s ?p ?o }", "named-graph-uri": graph})
        assert read.status_code == 403, read.text
    update = sparql(server, ALPHA_W, "update", f'INSERT DATA {{ GRAPH <{graph}> {{ <urn:s> <urn:p> "o" }} }}')
    assert update.status_code == 403, update.text
    assert server.dataset(ADMIN) == before


def _planted(server: LiveServer) -> tuple[str, str]:
    """Triples of every kind the server reads back from alpha's graphs, each with a value of the
    wrong kind (what alpha's writer may put there); and the update that takes them away."""
    base, sr, xsd = _base(server), vocab.SR, vocab.XSD
    doc, chunk, trace = f"{base}doc/alpha/d1", f"{base}doc/alpha/d1/chunk/bad", f"{base}trace/alpha/planted"
    bad = f'"not a number" , <urn:iri> , "1e999"^^<{xsd}double> , <<( <urn:a> <urn:b> <urn:c> )>>'
    source = (
        f"<{doc}> <{sr}progress> {bad} ; <{vocab.DCTERMS}title> <urn:iri> , <<( <urn:a> <urn:b> <urn:c> )>> . "
        f"<{chunk}> a <{sr}Chunk> ; <{vocab.PROV}wasDerivedFrom> <{doc}> ; <{sr}index> {bad} ; <{sr}text> {bad} . "
    )
    traces = (
        f'<{trace}> a <{sr}Trace> ; <{sr}question> {bad} ; <{sr}mode> {bad} ; <{sr}answer> "a" ; '
        f'<{vocab.PROV}startedAtTime> "x" ; <{sr}durationMs> {bad} ; <{sr}inputTokens> {bad} ; '
        f"<{sr}exploredEdges> {bad} ; <{sr}concept> {bad} ; "
        f"<{sr}seed> [ <{sr}entity> {bad} ; <{sr}score> {bad} ; <{sr}concept> {bad} ] ; "
        f"<{sr}selectedEdge> [ <{sr}fact> <<( <urn:a> <urn:b> <urn:c> )>> ; <{sr}score> {bad} ; <{sr}hop> {bad} ; "
        f"<{sr}concept> {bad} ] ; "
        f"<{sr}source> [ <{sr}chunk> {bad} ; <{sr}rank> {bad} ; <{sr}score> {bad} ] ; "
        f"<{sr}step> [ <{vocab.RDFS}label> {bad} ; <{sr}index> {bad} ; <{sr}durationMs> {bad} ] . "
    )
    knowledge = (
        f"<{base}id/alpha/acme-bank> <{vocab.RDFS}label> {bad} ; <{vocab.SKOS}definition> {bad} ; "
        f"<{vocab.RDF}type> {bad} ; <{base}rel/owns> {bad} . "
    )
    data = [(f"{base}graph/alpha/source", source), (f"{base}graph/alpha", knowledge)]
    plant = [f"INSERT DATA {{ GRAPH <{g}> {{ {t} }} }}" for g, t in data]
    plant.append(f"INSERT DATA {{ GRAPH <{base}graph/alpha/trace> {{ {traces} }} }}")
    remove = [f"DELETE DATA {{ GRAPH <{g}> {{ {t} }} }}" for g, t in data] + [
        f"DELETE {{ GRAPH ?g {{ ?item ?p ?o }} }} WHERE {{ GRAPH ?g {{ <{trace}> ?link ?item FILTER(isBlank(?item)) "
        "?item ?p ?o } }",
        f"DELETE WHERE {{ GRAPH ?g {{ <{trace}> ?p ?o }} }}",
    ]
    return " ;\n".join(plant), " ;\n".join(remove)


def test_nothing_a_collections_writer_plants_makes_a_read_of_it_fail(server: LiveServer) -> None:
    planted, removal = _planted(server)
    done = sparql(server, ADMIN, "update", planted)  # (the admin: a blank node is refused to a limited token)
    assert done.status_code == 204, done.text
    try:
        with server.client(ALPHA_R) as reader:
            traces = reader.get("/api/v1/traces?collection=alpha")
            reads = [
                traces,
                reader.get("/api/v1/traces/planted?collection=alpha"),
                reader.get("/trace/alpha/planted", headers={"Accept": "text/html"}),
                reader.get("/page/trace/alpha/planted"),
                reader.get("/api/v1/collections/alpha"),
                reader.get("/api/v1/collections"),
                reader.get("/api/v1/documents?collection=alpha"),
                reader.get("/api/v1/documents/d1?collection=alpha"),
                reader.get("/page/doc/alpha/d1"),
                reader.get("/page/doc/alpha/d1/chunk/bad"),
                reader.get("/data/doc/alpha/d1/chunk/bad.ttl"),
                reader.get("/page/id/alpha/acme-bank"),
                reader.get("/data/id/alpha/acme-bank.jsonld"),
                reader.get("/page/rel/owns"),
                reader.post("/api/v1/graph-rag", json={"question": "Who owns Acme Bank?", "collection": "alpha"}),
                reader.post("/api/v1/document-rag", json={"question": "Who owns Acme Bank?", "collection": "alpha"}),
            ]
        for response in reads:
            assert response.status_code < 500, (response.url, response.text[:300])
    finally:
        assert sparql(server, ADMIN, "update", removal).status_code == 204
