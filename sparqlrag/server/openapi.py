"""`/openapi.json`: the HTTP API as an OpenAPI 3.1 document, made from the route table
(routes.py): each route's operation, and the scope the table checks as its security. Every
JSON body is a model of operations/requests.py, the very one the route validates with, and
every answer a view of retrieval/views.py: their schemas here are generated from them. A test
checks that every route of the app is described and that the document is valid OpenAPI.
"""

from __future__ import annotations

import re
from typing import Any

from sparqlrag import __version__
from sparqlrag.operations.access import Scope
from sparqlrag.operations.answers import DocumentRagAnswer, GraphRagAnswer, TraceRecord
from sparqlrag.operations.entities import EntityAliases
from sparqlrag.operations.explore import EntityMatches, FactEvidence, Neighbourhood
from sparqlrag.operations.requests import (
    ChatRequest,
    DocumentRagRequest,
    EntityMerge,
    EntitySplit,
    GraphRagRequest,
    NewCollection,
    NlQuestion,
    OllamaChat,
    TextDocument,
)
from sparqlrag.server.api_schemas import STRING, components, json_object

CONVERTER = re.compile(r"\{(\w+):\w+\}")  # a Starlette path's `{id:path}` is OpenAPI's `{id}`


def document(endpoints: list[tuple[str, str, Scope | None, dict[str, Any]]]) -> dict[str, Any]:
    """The OpenAPI document of the routes (path, method, the scope a token needs, operation), in order."""
    paths: dict[str, dict[str, Any]] = {}
    for path, method, scope, described in endpoints:
        security = [{"bearer": [scope]}] if scope else []
        paths.setdefault(CONVERTER.sub(r"{\1}", path), {})[method.lower()] = {**described, "security": security}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "sparqlrag",
            "version": __version__,
            "description": "A SPARQL-first knowledge server: documents in, an RDF knowledge graph with provenance out, "
            "Graph RAG and Document RAG answers with traces.",
        },
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "tokens with the read or write scope"}
            },
            "schemas": {
                **components(
                    GraphRagRequest,
                    DocumentRagRequest,
                    NewCollection,
                    EntityMerge,
                    EntitySplit,
                    TextDocument,
                    NlQuestion,
                    ChatRequest,
                    OllamaChat,
                ),
                "Error": json_object(
                    ["error", "detail"],
                    error={**STRING, "description": "a stable code"},
                    detail={**STRING, "description": "what went wrong"},
                ),
                **components(
                    GraphRagAnswer,
                    DocumentRagAnswer,
                    TraceRecord,
                    Neighbourhood,
                    EntityMatches,
                    FactEvidence,
                    EntityAliases,
                    schema="serialization",
                ),
            },
        },
    }
