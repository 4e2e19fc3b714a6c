"""`/openapi.json`: the HTTP API as an OpenAPI 3.1 document.

Written out here, route by route, rather than generated: the handlers read their bodies by
hand (JSON, multipart, raw RDF), which no generator can see. A test checks that every route
of the app is described and that the document is valid OpenAPI.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag import __version__
from sparqlrag.retrieval.walk import GraphRagOptions

JSON = "application/json"
ERROR = {"$ref": "#/components/schemas/Error"}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {JSON: {"schema": schema}}}


def _object(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


STRING, INTEGER, NUMBER, BOOLEAN = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
ANY_OBJECT = {"type": "object"}
COLLECTION_QUERY = {
    "name": "collection",
    "in": "query",
    "schema": {**STRING, "default": "default"},
    "description": "the collection",
}


def _operation(
    summary: str,
    *,
    responses: dict[str, Any],
    body: dict[str, Any] | None = None,
    parameters: list[dict[str, Any]] | None = None,
    scope: str = "read",
) -> dict[str, Any]:
    """One operation; every one can also answer with a JSON error (4xx), and needs a token of
    `scope` when the server has tokens."""
    operation: dict[str, Any] = {
        "summary": summary,
        "security": [{"bearer": [scope]}],
        "responses": {**responses, "4XX": _json(ERROR, "the request was refused; the body says why")},
    }
    if body is not None:
        operation["requestBody"] = {"required": True, "content": body}
    if parameters:
        operation["parameters"] = parameters
    return operation


def _path(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": STRING, "description": description}


def _graph_store(what: str) -> dict[str, Any]:
    """The Graph Store Protocol's four methods on one kind of path."""
    responses = {
        "200": {"description": "RDF by Accept"},
        "201": {"description": "created"},
        "204": {"description": "done"},
    }
    return {
        method: _operation(
            f"Graph Store HTTP Protocol {method.upper()} {what}",
            scope="read" if method == "get" else "write",
            responses=responses,
        )
        for method in ("get", "put", "post", "delete")
    }


NAME_OR_IRI = {
    **STRING,
    "minLength": 1,
    "pattern": r"\S",
    "description": "an entity IRI, or a name only one thing of the collection has",
}
_DOCUMENTS = {"type": "array", "items": STRING}
ENTITY_ALIASES = _object(
    ["entity", "label", "aliases", "merges", "kept_apart"],
    entity=STRING,
    label={"type": ["string", "null"]},
    aliases={"type": "array", "items": _object(["name", "documents"], name=STRING, documents=_DOCUMENTS)},
    merges={
        "type": "array",
        "items": _object(
            ["alias", "iri", "rule", "score", "documents"],
            alias=STRING,
            iri=STRING,
            rule=STRING,
            score=NUMBER,
            documents=_DOCUMENTS,
        ),
    },
    kept_apart={"type": "array", "items": STRING},
)
QUESTION = _object(
    ["question"], question=STRING, collection=STRING, stream={**BOOLEAN, "description": "answer as server-sent events"}
)
ANSWER = _object(
    ["answer", "sources", "trace"],
    question=STRING,
    answer=STRING,
    trace={**STRING, "description": "the trace IRI"},
    model=STRING,
    usage=ANY_OBJECT,
    sources={"type": "array", "items": {"$ref": "#/components/schemas/Source"}},
)
COLLECTION = _object(
    ["name", "iri", "documents", "chunks", "facts"],
    name=STRING,
    iri=STRING,
    created=STRING,
    documents=INTEGER,
    chunks=INTEGER,
    facts=INTEGER,
    ontology={"type": ["string", "null"]},
)
ONTOLOGY = _object(
    ["name", "iri"],
    name=STRING,
    iri=STRING,
    classes=INTEGER,
    properties=INTEGER,
    triples=INTEGER,
    sha256=STRING,
    loaded=STRING,
)
RDF_BODY = {
    media: {"schema": STRING}
    for media in (
        "text/turtle",
        "application/rdf+xml",
        "application/n-triples",
        "application/ld+json",
        "application/owl+xml",
    )
}
ZIP = {"application/zip": {"schema": {"type": "string", "format": "binary"}}}
SSE = {"text/event-stream": {"schema": STRING}}
WALK_OPTIONS = {
    **{
        name: {
            **INTEGER,
            "minimum": GraphRagOptions.AT_LEAST.get(name, 1),
            "maximum": highest,
            "default": getattr(GraphRagOptions(), name),
        }
        for name, highest in GraphRagOptions.BOUNDS.items()
    },
    "reasoning": {**BOOLEAN, "default": False},
    "scorer": {"enum": ["facts", "text"], "default": "facts"},
}

PATHS: dict[str, dict[str, Any]] = {
    "/healthz": {
        "get": _operation(
            "Liveness: the store answers", responses={"200": _json(_object(["status"], status=STRING, version=STRING))}
        )
    },
    "/openapi.json": {"get": {**_operation("This document", responses={"200": _json(ANY_OBJECT)}), "security": []}},
    "/metrics": {
        "get": _operation(
            "Prometheus metrics: requests, latencies, SPARQL operations, ingest progress, LLM tokens",
            responses={"200": {"description": "Prometheus text format", "content": {"text/plain": {"schema": STRING}}}},
        )
    },
    "/sparql": {
        "get": _operation(
            "SPARQL 1.1 Protocol query (?query=), or the service description",
            parameters=[
                {"name": "query", "in": "query", "schema": STRING},
                {"name": "default-graph-uri", "in": "query", "schema": STRING},
                {"name": "named-graph-uri", "in": "query", "schema": STRING},
                {"name": "timeout", "in": "query", "schema": NUMBER},
            ],
            responses={
                "200": {
                    "description": "results by Accept: SPARQL JSON/XML/CSV/TSV, or an RDF syntax for CONSTRUCT/DESCRIBE"
                }
            },
        ),
        "post": _operation(
            "SPARQL 1.1 Protocol query or update (form, or a direct query/update body); updates need `write`",
            body={
                "application/x-www-form-urlencoded": {"schema": _object([], query=STRING, update=STRING)},
                "application/sparql-query": {"schema": STRING},
                "application/sparql-update": {"schema": STRING},
            },
            responses={"200": {"description": "query results"}, "204": {"description": "the update was applied"}},
        ),
    },
    "/store": _graph_store("(?default, ?graph=IRI, or the whole dataset)"),
    "/store/{path}": {
        "parameters": [_path("path", "names the graph {base}store/{path} directly")],
        **_graph_store("of a directly named graph"),
    },
    "/api/v1/documents": {
        "get": _operation(
            "The documents of a collection, with status and progress",
            parameters=[COLLECTION_QUERY],
            responses={"200": _json(_object(["documents"], documents={"type": "array", "items": ANY_OBJECT}))},
        ),
        "post": _operation(
            "Upload documents (JSON text, multipart files, or a raw body with ?id=); ingested now, or queued with "
            "Prefer: respond-async",
            scope="write",
            parameters=[COLLECTION_QUERY],
            body={
                JSON: {"schema": _object(["id", "text"], id=STRING, text=STRING, title=STRING)},
                "multipart/form-data": {"schema": _object([], file={"type": "string", "format": "binary"})},
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
            },
            responses={"201": _json(ANY_OBJECT, "ingested"), "202": _json(ANY_OBJECT, "queued")},
        ),
    },
    "/api/v1/documents/{id}": {
        "parameters": [_path("id", "the document id")],
        "get": _operation(
            "One document: status, progress, chunks",
            parameters=[COLLECTION_QUERY],
            responses={"200": _json(ANY_OBJECT)},
        ),
        "delete": _operation(
            "Delete a document, its chunks and the facts only it supported",
            scope="write",
            parameters=[COLLECTION_QUERY],
            responses={"204": {"description": "deleted"}},
        ),
    },
    "/api/v1/documents/{id}/reingest": {
        "parameters": [_path("id", "the document id")],
        "post": _operation(
            "Extract a kept document again",
            scope="write",
            parameters=[COLLECTION_QUERY],
            responses={"200": _json(ANY_OBJECT)},
        ),
    },
    "/api/v1/graph-rag": {
        "post": _operation(
            "Graph RAG: an answer with the facts used, sources and a trace",
            body={
                JSON: {
                    "schema": {
                        **QUESTION,
                        "properties": {
                            **QUESTION["properties"],
                            **WALK_OPTIONS,
                            "mode": {
                                "enum": ["hybrid", "graph"],
                                "default": "hybrid",
                                "description": "hybrid: keyword ranking fused in",
                            },
                        },
                    }
                }
            },
            responses={"200": {"description": "the answer", "content": {JSON: {"schema": ANSWER}, **SSE}}},
        )
    },
    "/api/v1/document-rag": {
        "post": _operation(
            "Document RAG over passages (vector, keyword or hybrid retrieval)",
            body={
                JSON: {
                    "schema": {
                        **QUESTION,
                        "properties": {
                            **QUESTION["properties"],
                            "mode": {"enum": ["vector", "keyword", "hybrid"]},
                            "k": INTEGER,
                            "rerank": BOOLEAN,
                            "mmr": NUMBER,
                            "weights": {"type": "array", "items": NUMBER},
                        },
                    }
                }
            },
            responses={"200": {"description": "the answer", "content": {JSON: {"schema": ANSWER}, **SSE}}},
        )
    },
    "/api/v1/traces": {
        "get": _operation(
            "The latest answers' traces",
            parameters=[COLLECTION_QUERY, {"name": "limit", "in": "query", "schema": INTEGER}],
            responses={"200": _json(_object(["traces"], traces={"type": "array", "items": ANY_OBJECT}))},
        )
    },
    "/api/v1/traces/{id}": {
        "parameters": [_path("id", "the trace id")],
        "get": _operation(
            "One trace: concepts, seeds, edges, sources, steps",
            parameters=[COLLECTION_QUERY],
            responses={"200": _json(ANY_OBJECT)},
        ),
    },
    "/api/v1/collections": {
        "get": _operation(
            "Collections with their counts",
            responses={"200": _json(_object(["collections"], collections={"type": "array", "items": COLLECTION}))},
        ),
        "post": _operation(
            "Create a collection, optionally extracting with a loaded ontology",
            scope="write",
            body={JSON: {"schema": _object(["name"], name=STRING, ontology=STRING)}},
            responses={"201": _json(COLLECTION)},
        ),
    },
    "/api/v1/collections/{name}": {
        "parameters": [_path("name", "the collection")],
        "get": _operation("One collection with its counts", responses={"200": _json(COLLECTION)}),
        "delete": _operation(
            "Delete a collection: graphs, vectors, keyword rows, documents",
            scope="write",
            responses={"204": {"description": "deleted"}},
        ),
    },
    "/api/v1/collections/{name}/core": {
        "parameters": [_path("name", "the collection")],
        "get": _operation(
            "Export the collection as a knowledge core (zip: TriG graphs, vectors, manifest)",
            responses={"200": {"description": "the core", "content": ZIP}},
        ),
        "post": _operation(
            "Import a knowledge core into this (new or empty) collection, with no extraction",
            scope="write",
            body=ZIP,
            responses={
                "201": _json(
                    _object(
                        ["collection"],
                        collection=STRING,
                        quads=INTEGER,
                        chunks=INTEGER,
                        entities=INTEGER,
                        rebased_from={"type": ["string", "null"]},
                    )
                )
            },
        ),
    },
    "/api/v1/collections/{name}/entities/aliases": {
        "parameters": [_path("name", "the collection")],
        "get": _operation(
            "An entity's aliases, the merges that joined them (rule, score, evidence documents), the names kept apart",
            parameters=[
                {
                    "name": "entity",
                    "in": "query",
                    "required": True,
                    "schema": {**STRING, "minLength": 1},
                    "description": "an entity IRI, or a name only one thing of the collection has",
                }
            ],
            responses={"200": _json(ENTITY_ALIASES)},
        ),
    },
    "/api/v1/collections/{name}/entities/merge": {
        "parameters": [_path("name", "the collection")],
        "post": _operation(
            "A person's merge: `other` is `entity` (its IRI becomes an alias, its facts move)",
            scope="write",
            body={JSON: {"schema": _object(["entity", "other"], entity=NAME_OR_IRI, other=NAME_OR_IRI)}},
            responses={"200": _json(ENTITY_ALIASES)},
        ),
    },
    "/api/v1/collections/{name}/entities/split": {
        "parameters": [_path("name", "the collection")],
        "post": _operation(
            "A person's split: `alias` names something else than `entity`, from now on",
            scope="write",
            body={JSON: {"schema": _object(["entity", "alias"], entity=NAME_OR_IRI, alias=NAME_OR_IRI)}},
            responses={"200": _json(ENTITY_ALIASES)},
        ),
    },
    "/api/v1/nl-query": {
        "post": _operation(
            "A question written as a checked SPARQL query over an ontology, and its results",
            body={JSON: {"schema": _object(["question"], question=STRING, collection=STRING, ontology=STRING)}},
            responses={
                "200": _json(
                    _object(
                        ["query", "results"], question=STRING, ontology=STRING, query=STRING, form=STRING, results={}
                    )
                )
            },
        )
    },
    "/api/v1/ontologies": {
        "get": _operation(
            "Loaded ontologies",
            responses={"200": _json(_object(["ontologies"], ontologies={"type": "array", "items": ONTOLOGY}))},
        ),
        "post": _operation(
            "Load an ontology (multipart file or raw RDF body; ?name=, ?replace=)",
            scope="write",
            body={
                **RDF_BODY,
                "multipart/form-data": {
                    "schema": _object(["file"], file={"type": "string", "format": "binary"}, name=STRING)
                },
            },
            responses={"201": _json(ONTOLOGY), "200": _json(ONTOLOGY, "reloaded or unchanged")},
        ),
    },
    "/api/v1/ontologies/{name}": {
        "parameters": [_path("name", "the ontology's name")],
        "get": _operation(
            "The ontology as RDF/XML (default), Turtle, N-Triples or JSON-LD by Accept",
            responses={"200": {"description": "RDF", "content": RDF_BODY}},
        ),
        "put": _operation(
            "Load or replace the ontology of this name",
            scope="write",
            body=RDF_BODY,
            responses={"200": _json(ONTOLOGY), "201": _json(ONTOLOGY)},
        ),
        "delete": _operation(
            "Remove the ontology (not while a collection extracts with it)",
            scope="write",
            responses={"204": {"description": "removed"}},
        ),
    },
    **{
        f"/{kind}/{{path}}": {
            "parameters": [_path("path", f"the rest of the {what} IRI")],
            "get": _operation(
                f"{what.capitalize()} IRIs: 303 to the HTML page or the RDF description, by Accept",
                responses={
                    "303": {"description": f"See Other: /page/{kind}/... or /data/{kind}/....{{ttl,rdf,jsonld,nt}}"}
                },
            ),
        }
        for kind, what in (("id", "an entity"), ("rel", "a relation"), ("doc", "a document or chunk"))
    },
    "/trace/{collection}/{id}": {
        "parameters": [_path("collection", "the collection"), _path("id", "the trace id")],
        "get": _operation(
            "A trace's IRI: 303 to its page (HTML) or its JSON, by Accept",
            responses={"303": {"description": "See Other: /page/trace/... or /api/v1/traces/..."}},
        ),
    },
    "/page/trace/{collection}/{id}": {
        "parameters": [_path("collection", "the collection"), _path("id", "the trace id")],
        "get": _operation(
            "A trace's page: the question, answer, seeds, facts and sources", responses={"200": {"description": "HTML"}}
        ),
    },
    "/page/{path}": {
        "parameters": [_path("path", "id/..., rel/... or doc/...: the IRI's path")],
        "get": _operation(
            "An entity's, relation's, document's or chunk's page, with its facts and sources",
            responses={"200": {"description": "HTML"}},
        ),
    },
    "/data/{path}": {
        "parameters": [_path("path", "id/..., rel/... or doc/..., then .ttl, .rdf, .jsonld or .nt")],
        "get": _operation(
            "An entity's, relation's, document's or chunk's description as RDF",
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
            "Error": _object(
                ["error", "detail"],
                error={**STRING, "description": "a stable code"},
                detail={**STRING, "description": "what went wrong"},
            ),
            "Source": _object(
                ["chunk", "document", "title", "text", "score"],
                chunk=STRING,
                document=STRING,
                title=STRING,
                text=STRING,
                score=NUMBER,
                supports={**ANY_OBJECT, "description": "Graph RAG: the fact the passage is evidence for"},
            ),
        },
    },
}


async def openapi(request: Request) -> Response:
    return JSONResponse(DOCUMENT)
