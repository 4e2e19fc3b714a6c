"""`/openapi.json`: the HTTP API as an OpenAPI 3.1 document.

The paths are written out here, route by route: many take what no model describes (multipart,
raw RDF, SPARQL text). Every JSON body is a model of server/contracts.py, the very one the route
validates with, and its schema here is generated from it. A test checks that every route of the
app is described and that the document is valid OpenAPI.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag import __version__
from sparqlrag.operations.answers import DocumentRagAnswer, GraphRagAnswer, TraceRecord
from sparqlrag.operations.requests import (
    AliasesQuery,
    DocumentRagRequest,
    EntityMerge,
    EntitySplit,
    GraphRagRequest,
    NewCollection,
    NlQuestion,
    TextDocument,
    TracesQuery,
)
from sparqlrag.server.api_schemas import (
    ANY_OBJECT,
    BOOLEAN,
    COLLECTION,
    COLLECTION_QUERY,
    ENTITY_ALIASES,
    ERROR,
    INTEGER,
    IRI,
    JSON,
    NAME,
    NUMBER,
    ONTOLOGY,
    ONTOLOGY_NAME,
    QUERY_TIMEOUT,
    RDF_BODY,
    REACH,
    SSE,
    STRING,
    TEXT,
    UPDATE,
    ZIP,
    components,
    graph_store,
    json_body,
    json_object,
    json_response,
    operation,
    path_parameter,
    query_parameters,
    reference,
)
from sparqlrag.server.sparql import MIN_TIMEOUT

JSON_RPC = {
    "type": "object",
    "required": ["jsonrpc", "method"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "method": STRING,
        "id": {},
        "params": {},  # what each method takes is the MCP schema's; the transport judges it
    },
}
INGESTED = {
    "200": json_response(ANY_OBJECT, "nothing changed: every document was there already as sent"),
    "201": json_response(ANY_OBJECT, "ingested"),
    "202": json_response(ANY_OBJECT, "queued (Prefer: respond-async)"),
}
PATHS: dict[str, dict[str, Any]] = {
    "/healthz": {
        "get": {
            **operation(
                "Liveness: the store can serve, answered without waiting behind queries (no token needed)",
                responses={
                    "200": json_response(json_object(["status"], status=STRING, version=STRING)),
                    "503": json_response(ERROR, "the store cannot serve now"),
                },
            ),
            "security": [],
        }
    },
    "/openapi.json": {
        "get": {**operation("This document", responses={"200": json_response(ANY_OBJECT)}), "security": []}
    },
    "/mcp": {
        "post": {
            "summary": "Model Context Protocol over streamable HTTP (stateless): one JSON-RPC message "
            "(Accept: application/json, text/event-stream); the write tool needs `write`",
            "security": [{"bearer": ["read"]}],
            "requestBody": {"required": True, "content": {"application/json": {"schema": JSON_RPC}}},
            "responses": {
                "200": {"description": "a JSON-RPC response", "content": {"application/json": {"schema": ANY_OBJECT}}},
                "202": {"description": "a notification or response accepted"},
                "4XX": {
                    "description": "refused: a JSON error, or a JSON-RPC error from the MCP transport",
                    "content": {"application/json": {"schema": ANY_OBJECT}},
                },
            },
        }
    },
    "/metrics": {
        "get": operation(
            "Prometheus metrics: requests, latencies, SPARQL operations, ingest progress, LLM tokens",
            responses={"200": {"description": "Prometheus text format", "content": {"text/plain": {"schema": STRING}}}},
        )
    },
    "/sparql": {
        "get": operation(
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
        "post": operation(
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
    },
    "/store": graph_store("(?default, ?graph=IRI, or the whole dataset)", dataset=True),
    "/store/{path}": {
        "parameters": [path_parameter("path", "names the graph {base}store/{path} directly")],
        **graph_store("of a directly named graph", dataset=False),
    },
    "/api/v1/documents": {
        "get": operation(
            "The documents of a collection, with status and progress",
            parameters=[COLLECTION_QUERY],
            responses={
                "200": json_response(json_object(["documents"], documents={"type": "array", "items": ANY_OBJECT}))
            },
        ),
        "post": operation(
            "Upload documents (JSON text, multipart files, or a raw body with ?id=); ingested now, or queued with "
            "Prefer: respond-async",
            scope="write",
            parameters=[COLLECTION_QUERY],
            body={
                **json_body(TextDocument),
                "multipart/form-data": {"schema": json_object([], file={"type": "string", "format": "binary"})},
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
            },
            responses=INGESTED,
        ),
    },
    "/api/v1/documents/{id}": {
        "parameters": [path_parameter("id", "the document id")],
        "get": operation(
            "One document: status, progress, chunks",
            parameters=[COLLECTION_QUERY],
            responses={"200": json_response(ANY_OBJECT)},
        ),
        "delete": operation(
            "Delete a document, its chunks and the facts only it supported",
            scope="write",
            parameters=[COLLECTION_QUERY],
            responses={"204": {"description": "deleted"}},
        ),
    },
    "/api/v1/documents/{id}/reingest": {
        "parameters": [path_parameter("id", "the document id")],
        "post": operation(
            "Extract a kept document again",
            scope="write",
            parameters=[COLLECTION_QUERY],
            responses=INGESTED,
        ),
    },
    "/api/v1/graph-rag": {
        "post": operation(
            "Graph RAG: an answer with the facts used, sources and a trace",
            body=json_body(GraphRagRequest),
            responses={
                "200": {"description": "the answer", "content": {JSON: {"schema": reference(GraphRagAnswer)}, **SSE}}
            },
        )
    },
    "/api/v1/document-rag": {
        "post": operation(
            "Document RAG over passages (vector, keyword or hybrid retrieval)",
            body=json_body(DocumentRagRequest),
            responses={
                "200": {"description": "the answer", "content": {JSON: {"schema": reference(DocumentRagAnswer)}, **SSE}}
            },
        )
    },
    "/api/v1/traces": {
        "get": operation(
            "The latest answers' traces",
            parameters=[
                COLLECTION_QUERY,
                *query_parameters(TracesQuery),
            ],
            responses={"200": json_response(json_object(["traces"], traces={"type": "array", "items": ANY_OBJECT}))},
        )
    },
    "/api/v1/traces/{id}": {
        "parameters": [path_parameter("id", "the trace id")],
        "get": operation(
            "One trace: concepts, seeds, edges, sources, steps",
            parameters=[COLLECTION_QUERY],
            responses={"200": json_response(reference(TraceRecord))},
        ),
    },
    "/api/v1/access": {  # (REACH: "all", or the collections' names)
        "get": operation(
            "What the request's token may do: the collections it reads and writes (`all`, or their "
            "names); `auth` false on a server without tokens",
            responses={
                "200": json_response(
                    json_object(["auth"], auth=BOOLEAN, reads=REACH, writes=REACH),
                )
            },
        ),
    },
    "/api/v1/collections": {
        "get": operation(
            "Collections with their counts",
            responses={
                "200": json_response(json_object(["collections"], collections={"type": "array", "items": COLLECTION}))
            },
        ),
        "post": operation(
            "Create a collection, optionally extracting with a loaded ontology",
            scope="write",
            body=json_body(NewCollection),
            responses={"201": json_response(COLLECTION)},
        ),
    },
    "/api/v1/collections/{name}": {
        "parameters": [path_parameter("name", "the collection", NAME)],
        "get": operation("One collection with its counts", responses={"200": json_response(COLLECTION)}),
        "delete": operation(
            "Delete a collection: graphs, vectors, keyword rows, documents. `default` always exists: "
            "it is emptied and stays (listed with no documents)",
            scope="write",
            responses={
                "200": json_response(
                    json_object(["collection", "emptied", "detail"], collection=NAME, emptied=BOOLEAN, detail=STRING),
                    "`default` emptied; it stays",
                ),
                "204": {"description": "deleted"},
            },
        ),
    },
    "/api/v1/collections/{name}/core": {
        "parameters": [path_parameter("name", "the collection", NAME)],
        "get": operation(
            "Export the collection as a knowledge core (zip: TriG graphs, vectors, manifest)",
            responses={"200": {"description": "the core", "content": ZIP}},
        ),
        "post": operation(
            "Import a knowledge core into this (new or empty) collection, with no extraction; a core exported "
            "from another collection or base IRI has its IRIs moved to this one",
            scope="write",
            body=ZIP,
            responses={
                "201": json_response(
                    json_object(
                        ["collection"],
                        collection=STRING,
                        quads=INTEGER,
                        chunks=INTEGER,
                        entities=INTEGER,
                        rebased_from={"type": ["string", "null"]},
                        renamed_from={"type": ["string", "null"]},
                    )
                )
            },
        ),
    },
    "/api/v1/collections/{name}/entities/aliases": {
        "parameters": [path_parameter("name", "the collection", NAME)],
        "get": operation(
            "An entity's aliases, the merges that joined them (rule, score, evidence documents), the names kept apart",
            parameters=query_parameters(AliasesQuery),
            responses={"200": json_response(ENTITY_ALIASES)},
        ),
    },
    "/api/v1/collections/{name}/entities/merge": {
        "parameters": [path_parameter("name", "the collection", NAME)],
        "post": operation(
            "A person's merge: `other` is `entity` (its IRI becomes an alias, its facts move)",
            scope="write",
            body=json_body(EntityMerge),
            responses={"200": json_response(ENTITY_ALIASES)},
        ),
    },
    "/api/v1/collections/{name}/entities/split": {
        "parameters": [path_parameter("name", "the collection", NAME)],
        "post": operation(
            "A person's split: `alias` names something else than `entity`, from now on",
            scope="write",
            body=json_body(EntitySplit),
            responses={"200": json_response(ENTITY_ALIASES)},
        ),
    },
    "/api/v1/nl-query": {
        "post": operation(
            "A question written as a checked SPARQL query over an ontology, and its results",
            body=json_body(NlQuestion),
            responses={
                "200": json_response(
                    json_object(
                        ["query", "results"], question=STRING, ontology=STRING, query=STRING, form=STRING, results={}
                    )
                ),
                "501": json_response(ERROR, "no LLM is configured to write the query (`llm` setting)"),
            },
        )
    },
    "/api/v1/ontologies": {
        "get": operation(
            "Loaded ontologies",
            responses={
                "200": json_response(json_object(["ontologies"], ontologies={"type": "array", "items": ONTOLOGY}))
            },
        ),
        "post": operation(
            "Load an ontology (multipart file or raw RDF body; ?name=, ?replace=)",
            scope="write",
            body={
                **RDF_BODY,
                "multipart/form-data": {
                    "schema": json_object(["file"], file={"type": "string", "format": "binary"}, name=STRING)
                },
            },
            responses={"201": json_response(ONTOLOGY), "200": json_response(ONTOLOGY, "reloaded or unchanged")},
        ),
    },
    "/api/v1/ontologies/{name}": {
        "parameters": [path_parameter("name", "the ontology's name", ONTOLOGY_NAME)],
        "get": operation(
            "The ontology as RDF/XML (default), Turtle, N-Triples or JSON-LD by Accept",
            responses={"200": {"description": "RDF", "content": RDF_BODY}},
        ),
        "put": operation(
            "Load or replace the ontology of this name",
            scope="write",
            body=RDF_BODY,
            responses={"200": json_response(ONTOLOGY), "201": json_response(ONTOLOGY)},
        ),
        "delete": operation(
            "Remove the ontology (not while a collection extracts with it)",
            scope="write",
            responses={"204": {"description": "removed"}},
        ),
    },
    **{
        f"/{kind}/{{path}}": {
            "parameters": [path_parameter("path", f"the rest of the {what} IRI")],
            "get": operation(
                f"{what.capitalize()} IRIs: 303 to the HTML page or the RDF description, by Accept",
                responses={
                    "303": {"description": f"See Other: /page/{kind}/... or /data/{kind}/....{{ttl,rdf,jsonld,nt}}"}
                },
            ),
        }
        for kind, what in (("id", "an entity"), ("rel", "a relation"), ("doc", "a document or chunk"))
    },
    "/stmt/{path}": {
        "parameters": [path_parameter("path", "the rest of a fact's reifier IRI")],
        "get": operation(
            "A reifier's IRI: 303 to its RDF (what it reifies, the chunks it came from), by Accept",
            responses={"303": {"description": "See Other: /data/stmt/....{ttl,rdf,jsonld,nt}"}},
        ),
    },
    "/trace/{collection}/{id}": {
        "parameters": [path_parameter("collection", "the collection", NAME), path_parameter("id", "the trace id")],
        "get": operation(
            "A trace's IRI: 303 to its page (HTML), its RDF or its JSON (otherwise), by Accept",
            responses={
                "303": {
                    "description": "See Other: /page/trace/..., /data/trace/....{ttl,rdf,jsonld,nt} or "
                    "/api/v1/traces/..."
                }
            },
        ),
    },
    "/page/trace/{collection}/{id}": {
        "parameters": [path_parameter("collection", "the collection", NAME), path_parameter("id", "the trace id")],
        "get": operation(
            "A trace's page: the question, answer, seeds, facts and sources", responses={"200": {"description": "HTML"}}
        ),
    },
    "/page/{path}": {
        "parameters": [path_parameter("path", "id/..., rel/... or doc/...: the IRI's path")],
        "get": operation(
            "An entity's, relation's, document's or chunk's page, with its facts and sources",
            responses={"200": {"description": "HTML"}},
        ),
    },
    "/file/{path}": {
        "parameters": [path_parameter("path", "doc/{collection}/{document id}: the document IRI's path")],
        "get": operation(
            "A document's original file, byte for byte, in its own media type (a PDF opens at `#page=n`); "
            "the document's IRI sends a client asking for that type here",
            responses={"200": {"description": "the file as uploaded"}},
        ),
    },
    "/data/{path}": {
        "parameters": [
            path_parameter("path", "id/..., rel/..., doc/..., stmt/... or trace/..., then .ttl, .rdf, .jsonld or .nt")
        ],
        "get": operation(
            "An entity's, relation's, document's, chunk's, reifier's or trace's description as RDF",
            responses={"200": {"description": "RDF", "content": RDF_BODY}},
        ),
    },
}

DOCUMENT: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "sparqlrag",
        "version": __version__,
        "description": "A SPARQL-first knowledge server: documents in, an RDF knowledge graph with provenance out, "
        "Graph RAG and Document RAG answers with traces.",
    },
    "paths": PATHS,
    "components": {
        "securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer", "description": "tokens with the read or write scope"}
        },
        "schemas": {
            **components(
                GraphRagRequest, DocumentRagRequest, NewCollection, EntityMerge, EntitySplit, TextDocument, NlQuestion
            ),
            "Error": json_object(
                ["error", "detail"],
                error={**STRING, "description": "a stable code"},
                detail={**STRING, "description": "what went wrong"},
            ),
            **components(GraphRagAnswer, DocumentRagAnswer, TraceRecord, schema="serialization"),
        },
    },
}


async def openapi(request: Request) -> Response:
    return JSONResponse(DOCUMENT)
