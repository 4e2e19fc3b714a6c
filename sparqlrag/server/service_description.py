"""The SPARQL 1.1 Service Description returned by a bare GET on /sparql."""

from __future__ import annotations

from pyoxigraph import BlankNode, Literal, NamedNode, Triple, serialize
from starlette.requests import Request
from starlette.responses import Response

from sparqlrag.config import Settings
from sparqlrag.operations.failures import Refused
from sparqlrag.store.formats import GRAPH_FORMATS, negotiate, with_charset

SD = "http://www.w3.org/ns/sparql-service-description#"
FORMATS = "http://www.w3.org/ns/formats/"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
RESULT_FORMATS = [
    "SPARQL_Results_JSON",
    "SPARQL_Results_XML",
    "SPARQL_Results_CSV",
    "SPARQL_Results_TSV",
    "Turtle",
    "N-Triples",
    "RDF_XML",
    "JSON-LD",
    "TriG",
    "N-Quads",
]


def _sd(name: str) -> NamedNode:
    return NamedNode(SD + name)


def description(endpoint: str, settings: Settings) -> list[Triple]:
    service, dataset, default_graph = BlankNode(), BlankNode(), BlankNode()
    triples: list[tuple[BlankNode, NamedNode, BlankNode | NamedNode | Literal]] = [
        (service, RDF_TYPE, _sd("Service")),
        (service, _sd("endpoint"), NamedNode(endpoint)),
        (service, _sd("supportedLanguage"), _sd("SPARQL11Query")),
        (service, _sd("supportedLanguage"), _sd("SPARQL11Update")),
        (service, _sd("feature"), _sd("EmptyGraphs")),
        (service, _sd("defaultDataset"), dataset),
        (dataset, RDF_TYPE, _sd("Dataset")),
        (dataset, _sd("defaultGraph"), default_graph),
        (default_graph, RDF_TYPE, _sd("Graph")),
        (service, NamedNode("http://www.w3.org/2000/01/rdf-schema#comment"), Literal("sparqlrag SPARQL 1.1 endpoint")),
    ]
    if settings.union_default_graph:
        triples.append((service, _sd("feature"), _sd("UnionDefaultGraph")))
    triples += [(service, _sd("resultFormat"), NamedNode(FORMATS + name)) for name in RESULT_FORMATS]
    return [Triple(s, p, o) for s, p, o in triples]


def service_description(request: Request, settings: Settings) -> Response:
    chosen = negotiate(request.headers.get("accept"), [(m, f) for m, f in GRAPH_FORMATS if not f.supports_datasets])
    if chosen is None:
        raise Refused(
            406, "not_acceptable", "the service description is available as Turtle, N-Triples, RDF/XML or JSON-LD"
        )
    media_type, fmt = chosen
    endpoint = str(request.url.replace(query=""))
    body = serialize(description(endpoint, settings), format=fmt)
    return Response(body, media_type=with_charset(media_type), headers={"Vary": "Accept"})
