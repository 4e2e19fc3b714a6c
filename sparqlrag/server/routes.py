"""Every route, once: its path and method, the handler, the scope a token needs for it, and
what the OpenAPI document says of it (endpoints.Endpoint). This module holds the protocol
routes, the linked-data IRIs, the pages and the server's own; api_routes.py the `/api/v1` ones.

The app's routes are made from this table (`routes`), each handler behind `authorize` for its
scope, so a route cannot answer before its token is judged; the OpenAPI document's paths are
made from it too (`openapi.document`), so the scope it states is the one enforced. A handler
whose operation decides more (a SPARQL update needs `write`, a Graph Store write a graph the
token may change) asks for that itself, after the table's check.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

from sparqlrag.operations.sparql_services import SERVICE_PATHS
from sparqlrag.server import answers, health, linked_data, originals, pages
from sparqlrag.server.api_routes import API
from sparqlrag.server.api_schemas import (
    ANY_OBJECT,
    ERROR,
    IRI,
    JSON,
    NAME,
    NUMBER,
    QUERY_TIMEOUT,
    RDF_SERVED,
    STRING,
    TEXT,
    TRACE_ID,
    UPDATE,
    graph_store_doc,
    json_object,
    json_response,
    operation,
    path_parameter,
)
from sparqlrag.server.endpoints import Endpoint, route
from sparqlrag.server.graph_store import graph_store
from sparqlrag.server.metrics import metrics_endpoint
from sparqlrag.server.openapi import document
from sparqlrag.server.sparql import MIN_TIMEOUT, service_endpoint, sparql_endpoint
from sparqlrag.server.state import state_of


class _Assistant:
    """The MCP endpoint the app was made with (`ServerState.assistant`), as an ASGI app."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await state_of(Request(scope)).assistant(scope, receive, send)


async def _openapi(request: Request) -> Response:
    return JSONResponse(DOCUMENT)


JSON_RPC = json_object(["jsonrpc", "method"], jsonrpc={"const": "2.0"}, method=STRING, id={}, params={})
HTML = {"200": {"description": "HTML"}}
IN_PATH = path_parameter("collection", "the collection", NAME)


def _linked(kind: str, what: str) -> Endpoint:
    return Endpoint(
        f"/{kind}/{{path:path}}",
        "GET",
        linked_data.resource,
        doc=operation(
            f"{what[0].upper() + what[1:]} IRIs: 303 to the HTML page or the RDF description, by Accept",
            parameters=[path_parameter("path", f"the rest of {what} IRI")],
            responses={
                "303": {"description": f"See Other: /page/{kind}/... or /data/{kind}/....{{ttl,rdf,jsonld,nt}}"}
            },
        ),
    )


def _gsp(path: str, what: str, *, dataset: bool) -> list[Endpoint]:
    """The Graph Store Protocol's methods on one kind of path: reads need `read`, the rest `write`."""
    docs = graph_store_doc(what, dataset=dataset)
    if not dataset:
        named = path_parameter("path", "names the graph {base}store/{path} directly")
        docs = {method: {**doc, "parameters": [named, *doc.get("parameters", [])]} for method, doc in docs.items()}
    return [
        Endpoint(path, method, graph_store, "read" if method == "GET" else "write", docs[method.lower()])
        for method in ("GET", "PUT", "POST", "DELETE")
    ]


PROTOCOL: list[Endpoint] = [  # the protocol routes first: the router tries each route in turn
    Endpoint(
        "/sparql",
        "GET",
        sparql_endpoint,
        doc=operation(
            "SPARQL 1.1 Protocol query (?query=), or the service description",
            parameters=[
                {"name": "query", "in": "query", "schema": TEXT},
                {"name": "default-graph-uri", "in": "query", "schema": IRI},
                {"name": "named-graph-uri", "in": "query", "schema": IRI},
                {
                    "name": "timeout",
                    "in": "query",
                    "schema": {**NUMBER, "minimum": MIN_TIMEOUT},
                    "description": "seconds, at most the server's max_query_timeout (300 by default)",
                },
            ],
            responses={
                "200": {
                    "description": "results by Accept: SPARQL JSON/XML/CSV/TSV, or an RDF syntax for CONSTRUCT/DESCRIBE"
                },
                "503": QUERY_TIMEOUT,
            },
        ),
    ),
    Endpoint(
        "/sparql",
        "POST",
        sparql_endpoint,
        doc=operation(
            "SPARQL 1.1 Protocol query or update (form, or a direct query/update body); updates need `write`",
            body={
                "application/x-www-form-urlencoded": {
                    "schema": {**json_object([], query=TEXT, update=UPDATE), "not": {"required": ["query", "update"]}}
                },
                "application/sparql-query": {"schema": TEXT},
                "application/sparql-update": {"schema": UPDATE},
            },
            responses={
                "200": {"description": "query results"},
                "204": {"description": "the update was applied"},
                "503": QUERY_TIMEOUT,
            },
        ),
    ),
    *(
        Endpoint(
            f"/sparql/{path}",
            method,
            service_endpoint(service),
            doc=operation(
                f"sr:{service} as a SPARQL Protocol endpoint, for another engine's SERVICE <.../sparql/{path}>: "
                "the query's pattern is the service's block (README, \"Retrieval inside SPARQL\")",
                parameters=[{"name": "query", "in": "query", "schema": TEXT}] if method == "GET" else None,
                body=None
                if method == "GET"
                else {
                    "application/x-www-form-urlencoded": {"schema": json_object(["query"], query=TEXT)},
                    "application/sparql-query": {"schema": TEXT},
                },
                responses={"200": {"description": "query results"}, "503": QUERY_TIMEOUT},
            ),
        )
        for service, path in SERVICE_PATHS.items()
        for method in ("GET", "POST")
    ),
    *_gsp("/store", "(?default, ?graph=IRI, or the whole dataset)", dataset=True),
    *_gsp("/store/{path:path}", "of a directly named graph", dataset=False),
    Endpoint("/", "GET", pages.sparql_editor, scope=None),
    Endpoint("/ask", "GET", pages.ask_page, scope=None),
    Endpoint("/library", "GET", pages.library_page, scope=None),
    Endpoint("/explore", "GET", pages.explore_page, scope=None),
    *(
        _linked(kind, what)
        for kind, what in (("id", "an entity"), ("rel", "a relation"), ("doc", "a document or chunk"))
    ),
    Endpoint(
        "/stmt/{path:path}",
        "GET",
        linked_data.resource,
        doc=operation(
            "A reifier's IRI: 303 to its RDF (what it reifies, the chunks it came from), by Accept",
            parameters=[path_parameter("path", "the rest of a fact's reifier IRI")],
            responses={"303": {"description": "See Other: /data/stmt/....{ttl,rdf,jsonld,nt}"}},
        ),
    ),
    Endpoint(
        "/trace/{collection}/{id}",
        "GET",
        answers.trace_resource,
        doc=operation(
            "A trace's IRI: 303 to its page (HTML), its RDF or its JSON (otherwise), by Accept",
            parameters=[IN_PATH, TRACE_ID],
            responses={
                "303": {
                    "description": "See Other: /page/trace/..., /data/trace/....{ttl,rdf,jsonld,nt} or "
                    "/api/v1/traces/..."
                }
            },
        ),
    ),
    Endpoint(
        "/page/trace/{collection}/{id}",
        "GET",
        answers.trace_page,
        doc=operation(
            "A trace's page: the question, answer, seeds, facts and sources",
            parameters=[IN_PATH, TRACE_ID],
            responses=HTML,
        ),
    ),
    Endpoint(
        "/page/{path:path}",
        "GET",
        linked_data.page,
        doc=operation(
            "An entity's, relation's, document's or chunk's page, with its facts and sources",
            parameters=[path_parameter("path", "id/..., rel/... or doc/...: the IRI's path")],
            responses=HTML,
        ),
    ),
    Endpoint(
        "/data/{path:path}",
        "GET",
        linked_data.data,
        doc=operation(
            "An entity's, relation's, document's, chunk's, reifier's or trace's description as RDF",
            parameters=[
                path_parameter(
                    "path", "id/..., rel/..., doc/..., stmt/... or trace/..., then .ttl, .rdf, .jsonld or .nt"
                )
            ],
            responses={"200": {"description": "RDF", "content": RDF_SERVED}},
        ),
    ),
    Endpoint(
        "/file/{path:path}",
        "GET",
        originals.original,
        doc=operation(
            "A document's original file, byte for byte, in its own media type (a PDF opens at `#page=n`); "
            "the document's IRI sends a client asking for that type here",
            parameters=[path_parameter("path", "doc/{collection}/{document id}: the document IRI's path")],
            responses={"200": {"description": "the file as uploaded"}},
        ),
    ),
    Endpoint(
        "/mcp",
        "POST",
        _Assistant(),
        asgi=True,
        doc=operation(
            "Model Context Protocol over streamable HTTP (stateless): one JSON-RPC message "
            "(Accept: application/json, text/event-stream); the write tool needs `write`",
            body={JSON: {"schema": JSON_RPC}},
            responses={
                "200": {"description": "a JSON-RPC response", "content": {JSON: {"schema": ANY_OBJECT}}},
                "202": {"description": "a notification or response accepted"},
            },
            refused={
                "description": "refused: a JSON error, or a JSON-RPC error from the MCP transport",
                "content": {JSON: {"schema": ANY_OBJECT}},
            },
        ),
    ),
    Endpoint(
        "/healthz",
        "GET",
        health.healthz,
        scope=None,
        doc=operation(
            "Liveness: the store can serve, answered without waiting behind queries (no token needed)",
            responses={
                "200": json_response(json_object(["status"], status=STRING, version=STRING)),
                "503": json_response(ERROR, "the store cannot serve now"),
            },
        ),
    ),
    Endpoint(
        "/metrics",
        "GET",
        metrics_endpoint,
        per_collection=False,
        doc=operation(
            "Prometheus metrics: requests, latencies, SPARQL operations, ingest progress, LLM tokens",
            responses={"200": {"description": "Prometheus text format", "content": {"text/plain": {"schema": STRING}}}},
        ),
    ),
    Endpoint(
        "/openapi.json",
        "GET",
        _openapi,
        scope=None,
        doc=operation("This document", responses={"200": json_response(ANY_OBJECT)}),
    ),
]
ENDPOINTS = [*PROTOCOL, *API]
DOCUMENT = document([(e.path, e.method, e.scope, e.doc) for e in ENDPOINTS if e.doc is not None])


def routes() -> list[BaseRoute]:
    """The app's routes, in the table's order, and the pages' static files."""
    return [*map(route, ENDPOINTS), Mount("/static", StaticFiles(directory=pages.STATIC), name="static")]
