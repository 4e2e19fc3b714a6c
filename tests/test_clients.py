"""Real SPARQL clients against the live server: SPARQLWrapper, rdflib's SPARQLUpdateStore, plain HTTP."""

from __future__ import annotations

import threading
import time

import httpx
from pyoxigraph import CanonicalizationAlgorithm, Dataset, RdfFormat, parse
from rdflib import Graph, Literal, URIRef
from rdflib.plugins.stores.sparqlstore import SPARQLUpdateStore
from SPARQLWrapper import JSON, POST, TURTLE, SPARQLWrapper

from tests.conftest import LiveServer, restarted

EX = "http://example.org/"
SLOW_QUERY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"


def test_sparqlwrapper_updates_and_queries(clean_server: LiveServer) -> None:
    update = SPARQLWrapper(clean_server.sparql, updateEndpoint=clean_server.sparql)
    update.setMethod(POST)
    update.setQuery(
        f'INSERT DATA {{ GRAPH <{EX}g> {{ <{EX}alice> <{EX}knows> <{EX}bob> . <{EX}bob> <{EX}name> "Bob" }} }}'
    )
    assert update.query().response.status == 204

    select = SPARQLWrapper(clean_server.sparql)
    select.setQuery(f"SELECT ?who ?name WHERE {{ <{EX}alice> <{EX}knows> ?who . ?who <{EX}name> ?name }}")
    select.setReturnFormat(JSON)
    selected = select.query().convert()
    assert isinstance(selected, dict)
    bindings = selected["results"]["bindings"]
    assert [(b["who"]["value"], b["name"]["value"]) for b in bindings] == [(f"{EX}bob", "Bob")]

    construct = SPARQLWrapper(clean_server.sparql)
    construct.setQuery(f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH <{EX}g> {{ ?s ?p ?o }} }}")
    construct.setReturnFormat(TURTLE)
    constructed = construct.query().convert()
    assert isinstance(constructed, bytes)
    graph = Graph().parse(data=constructed, format="turtle")
    assert len(graph) == 2 and (URIRef(f"{EX}bob"), URIRef(f"{EX}name"), Literal("Bob")) in graph

    ask = SPARQLWrapper(clean_server.sparql)
    ask.setQuery(f"ASK {{ <{EX}bob> <{EX}knows> ?x }}")
    ask.setReturnFormat(JSON)
    asked = ask.query().convert()
    assert isinstance(asked, dict) and asked["boolean"] is False


def test_rdflib_sparql_update_store(clean_server: LiveServer) -> None:
    store = SPARQLUpdateStore(query_endpoint=clean_server.sparql, update_endpoint=clean_server.sparql)
    graph = Graph(store, identifier=URIRef(f"{EX}people"))
    graph.add((URIRef(f"{EX}carol"), URIRef(f"{EX}age"), Literal(41)))
    graph.add((URIRef(f"{EX}dave"), URIRef(f"{EX}age"), Literal(35)))
    graph.remove((URIRef(f"{EX}dave"), None, None))
    assert len(graph) == 1
    rows = list(graph.query(f"SELECT ?who ?age WHERE {{ ?who <{EX}age> ?age }}"))
    assert [(str(r[0]), r[1].toPython()) for r in rows] == [(f"{EX}carol", 41)]  # type: ignore[index, union-attr]
    assert (URIRef(f"{EX}carol"), URIRef(f"{EX}age"), Literal(41)) in graph
    store.close()
    with clean_server.client() as client:
        turtle = client.get("/store", params={"graph": f"{EX}people"}, headers={"Accept": "text/turtle"})
    assert "41" in turtle.text


def test_trig_dump_reloads_isomorphic_over_http(clean_server: LiveServer, tmp_path) -> None:
    data = (
        f"@prefix ex: <{EX}> .\n"
        'ex:a ex:p [ ex:q "blank" ] .\n'
        "ex:g { ex:s ex:knows ex:o . "
        "ex:r <http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> <<( ex:s ex:knows ex:o )>> . }\n"
    )
    with clean_server.client() as client:
        assert client.put("/store", content=data, headers={"Content-Type": "application/trig"}).status_code == 204
        dump = client.get("/store", headers={"Accept": "application/trig"})
        assert dump.headers["content-type"] == "application/trig; charset=utf-8"
        assert (
            client.put("/store", content=dump.content, headers={"Content-Type": "application/trig"}).status_code == 204
        )
        again = client.get("/store", headers={"Accept": "application/trig"})
    original, reloaded = (
        Dataset(parse(data.encode(), format=RdfFormat.TRIG)),
        Dataset(parse(again.content, format=RdfFormat.TRIG)),
    )
    for dataset in (original, reloaded):
        dataset.canonicalize(CanonicalizationAlgorithm.UNSTABLE)
    assert len(reloaded) == 4 and original == reloaded


def test_describe_over_http_gives_each_triple_once(clean_server: LiveServer) -> None:
    with clean_server.client() as client:
        update = "INSERT DATA { GRAPH <urn:g1> { <urn:s> <urn:p> <urn:o> } GRAPH <urn:g2> { <urn:s> <urn:p> <urn:o> } }"
        assert client.post("/sparql", data={"update": update}).status_code == 204
        described = client.get(
            "/sparql", params={"query": "DESCRIBE <urn:s>"}, headers={"Accept": "application/n-triples"}
        )
    assert described.status_code == 200 and described.text.splitlines() == ["<urn:s> <urn:p> <urn:o> ."]


def test_head_has_get_headers_without_body(clean_server: LiveServer) -> None:
    with clean_server.client() as client:
        client.put(
            "/store?default",
            content="<http://a> <http://b> <http://c> .",
            headers={"Content-Type": "application/n-triples"},
        )
        cases = [
            (client.get(path, headers={"Accept": accept}), client.head(path, headers={"Accept": accept}), same)
            for path, accept, same in (
                ("/store?default", "text/turtle", ("content-type", "content-length", "vary")),
                ("/sparql?query=ASK%7B%7D", "application/sparql-results+json", ("content-type", "content-length")),
                ("/sparql", "text/turtle", ("content-type",)),  # the service description: blank node labels vary
            )
        ]
    for get, head, same in cases:
        assert get.status_code == head.status_code == 200 and head.content == b"", head.text
        for name in same:
            assert head.headers.get(name) == get.headers.get(name), name


def test_cors_preflight_and_headers(clean_server: LiveServer) -> None:
    with clean_server.client() as client:
        preflight = client.options(
            "/sparql",
            headers={
                "Origin": "http://yasgui.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type",
            },
        )
        simple = client.get("/sparql", params={"query": "ASK {}"}, headers={"Origin": "http://yasgui.example"})
    assert preflight.status_code == 200
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert simple.headers["access-control-allow-origin"] == "*"


def test_slow_query_is_cut_off_while_another_client_is_served(clean_server: LiveServer) -> None:
    triples = "".join(f'<http://e/s{i}> <http://e/p> "{i}" .\n' for i in range(2000))
    with clean_server.client() as client:
        client.put("/store?default", content=triples, headers={"Content-Type": "application/n-triples"})
    restarts = clean_server.store.restarts
    quick: list[tuple[float, int]] = []  # (when answered, status)
    errors: list[BaseException] = []
    done = threading.Event()

    def second_client() -> None:
        try:
            with httpx.Client(base_url=clean_server.url, timeout=30) as other:
                while not done.is_set():
                    response = other.get("/sparql", params={"query": "ASK { <http://e/s7> ?p ?o }"})
                    quick.append((time.monotonic(), response.status_code))
        except BaseException as error:  # seen by the test, not lost with the thread
            errors.append(error)

    thread = threading.Thread(target=second_client)
    thread.start()
    started = time.monotonic()
    with clean_server.client() as client:
        slow = client.get("/sparql", params={"query": SLOW_QUERY, "timeout": "1.5"})
    ended = time.monotonic()
    done.set()
    thread.join()
    assert errors == []
    assert slow.status_code == 503
    assert slow.json()["error"] == "query_timeout" and "1.5 s limit" in slow.json()["detail"]
    assert restarted(clean_server.store, restarts + 1)  # the process running it was ended
    assert clean_server.store.restarts == restarts + 1
    assert any(started < when < ended for when, _ in quick)  # the other client was served meanwhile
    assert {status for _, status in quick} == {200}
    with clean_server.client() as client:
        assert client.get(
            "/sparql", params={"query": "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }"}, headers={"Accept": "text/csv"}
        ).text.split() == ["n", "2000"]


def test_direct_graph_path_names_the_graph_iri_verbatim(clean_server: LiveServer) -> None:
    base = clean_server.settings.base_iri
    with clean_server.client() as client:
        created = client.put(
            "/store/people/%31.ttl",
            content="<http://a> <http://b> <http://c> .",
            headers={"Content-Type": "application/n-triples"},
        )
        assert created.status_code == 201
        listing = client.get(
            "/sparql", params={"query": "SELECT ?g WHERE { GRAPH ?g {} }"}, headers={"Accept": "text/csv"}
        )
        assert listing.text.split() == ["g", f"{base}store/people/%31.ttl"]
        indirect = client.get(
            "/store", params={"graph": f"{base}store/people/%31.ttl"}, headers={"Accept": "application/n-triples"}
        )
        assert indirect.text == "<http://a> <http://b> <http://c> .\n"
