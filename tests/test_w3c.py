"""The W3C SPARQL 1.1 Protocol, Graph Store Protocol and Service Description suites, over real HTTP.

One pytest case per manifest entry, each on an empty store (the manifests assume one).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rdflib import RDF, Graph, Namespace, URIRef

from tests.conftest import TEST_DATA, LiveServer, start_server
from tests.oxigraph_server import start_oxigraph
from tests.virtuoso_server import start_virtuoso
from tests.w3c import Case, load_cases, run_case

SUITES = TEST_DATA / "w3c" / "sparql11"
PROTOCOL = load_cases(SUITES / "protocol" / "manifest.ttl")
GRAPH_STORE = load_cases(SUITES / "graph-store-protocol" / "manifest.ttl")
SD = Namespace("http://www.w3.org/ns/sparql-service-description#")


def test_the_suites_have_the_published_sizes() -> None:
    assert (len(PROTOCOL), len(GRAPH_STORE)) == (34, 13)
    assert all(case.steps for case in PROTOCOL + GRAPH_STORE)


@pytest.fixture(scope="module")
def on_oxigraph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server that keeps everything in a real `oxigraph serve` (store/remote.py)."""
    oxigraph = start_oxigraph(tmp_path_factory.mktemp("oxigraph"))
    server, stop = start_server(tmp_path_factory.mktemp("remote"), **oxigraph.endpoints)
    yield server
    stop()
    oxigraph.stop()


@pytest.fixture(scope="module")
def on_virtuoso(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, set[str]]]:
    """A server that keeps everything in Virtuoso, with the graphs Virtuoso keeps for itself."""
    virtuoso = start_virtuoso(tmp_path_factory.mktemp("virtuoso"))
    server, stop = start_server(tmp_path_factory.mktemp("remote"), **virtuoso.endpoints)
    yield server, _graphs(server)
    stop()
    virtuoso.stop()


def _graphs(server: LiveServer) -> set[str]:
    with server.client() as client:
        rows = client.get("/sparql", params={"query": "SELECT DISTINCT ?g { GRAPH ?g { ?s ?p ?o } }"}).json()[
            "results"
        ]["bindings"]
    return {row["g"]["value"] for row in rows}


@pytest.fixture(params=["embedded", "oxigraph", "virtuoso"])
def server(request: pytest.FixtureRequest) -> LiveServer:
    """Each case on an empty store: the server's own, then on remote stores (on Virtuoso, every
    graph but its own system graphs, which DROP ALL would take)."""
    if request.param == "virtuoso":
        chosen, system = request.getfixturevalue("on_virtuoso")
        drops = [f"DROP SILENT GRAPH <{g}>" for g in sorted(_graphs(chosen) - system)]
    else:
        chosen = request.getfixturevalue("live_server" if request.param == "embedded" else "on_oxigraph")
        drops = ["DROP ALL"]
    with chosen.client() as client:
        for drop in drops:
            response = client.post("/sparql", content=drop, headers={"Content-Type": "application/sparql-update"})
            assert response.status_code == 204, response.text
    return chosen


@pytest.mark.parametrize("case", PROTOCOL, ids=[c.name for c in PROTOCOL])
def test_protocol(case: Case, server: LiveServer) -> None:
    with server.client() as client:
        run_case(case, client)


@pytest.mark.parametrize("case", GRAPH_STORE, ids=[c.name for c in GRAPH_STORE])
def test_graph_store_protocol(case: Case, server: LiveServer) -> None:
    with server.client() as client:
        run_case(case, client)


def _description(server: LiveServer, accept: str) -> tuple[Graph, str]:
    with server.client() as client:
        response = client.get("/sparql", headers={"Accept": accept})
    assert response.status_code == 200, response.text
    media_type = response.headers["content-type"].split(";")[0]
    return Graph().parse(data=response.text, format=media_type), media_type


@pytest.mark.parametrize("accept", ["text/turtle", "application/rdf+xml", "application/n-triples", "*/*"])
def test_service_description_returns_rdf(live_server: LiveServer, accept: str) -> None:
    graph, media_type = _description(live_server, accept)
    assert len(graph) > 5
    assert accept == "*/*" or media_type == accept


def test_service_description_has_endpoint_triple(live_server: LiveServer) -> None:
    graph, _ = _description(live_server, "text/turtle")
    services = list(graph.subjects(SD.endpoint, URIRef(live_server.sparql)))
    assert len(services) == 1


def test_service_description_conforms_to_schema(live_server: LiveServer) -> None:
    graph, _ = _description(live_server, "text/turtle")
    (service,) = graph.subjects(RDF.type, SD.Service)
    languages = set(graph.objects(service, SD.supportedLanguage))
    assert languages and languages <= {SD.SPARQL10Query, SD.SPARQL11Query, SD.SPARQL11Update}
    assert all(isinstance(o, URIRef) for o in graph.objects(service, SD.resultFormat))
    dataset = graph.value(service, SD.defaultDataset)
    assert (dataset, RDF.type, SD.Dataset) in graph
    assert (graph.value(dataset, SD.defaultGraph), RDF.type, SD.Graph) in graph
    vocabulary = set(
        """
        Service Dataset Graph endpoint supportedLanguage feature resultFormat defaultDataset defaultGraph SPARQL10Query
        SPARQL11Query SPARQL11Update UnionDefaultGraph EmptyGraphs BasicFederatedQuery DereferencesURIs RequiresDataset
        namedGraph name graph inputFormat
        """.split()
    )
    used = {str(t).removeprefix(str(SD)) for triple in graph for t in triple if str(t).startswith(str(SD))}
    assert used <= vocabulary, used - vocabulary
