"""`POST /api/v1/nl-query`: a question becomes a checked SPARQL query over an ontology, which
runs under the query time limit; the answer has the query and its results."""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag.operations import queries
from sparqlrag.operations.requests import NlQuestion
from sparqlrag.server.auth import client_key
from sparqlrag.server.collections import opened
from sparqlrag.server.contracts import parsed
from sparqlrag.server.rate_limit import limit_answers
from sparqlrag.server.state import state_of
from sparqlrag.store.base import QueryResult


async def nl_query(request: Request) -> Response:
    """`{"question", "collection"?, "ontology"?}` -> `{"question", "ontology", "query", "form", "results"}`
    (SPARQL JSON results for SELECT and ASK, Turtle text for CONSTRUCT)."""
    limit_answers(request)
    settings = state_of(request).settings
    asked = await parsed(request, NlQuestion)
    collection = await opened(request, asked.collection)
    store = state_of(request).store

    def run(query: str, form: str) -> QueryResult:
        accept = "text/turtle" if form == "construct" else "application/sparql-results+json"
        return store.query(
            query,
            accept=accept,
            union_default_graph=True,
            timeout=settings.query_timeout,
            max_bytes=settings.max_result_bytes,
        )

    async with state_of(request).queries.admitted(client_key(request)):
        answer = await queries.nl_query(collection, asked, run)
    result = answer.result
    results = result.body.decode("utf-8") if answer.form == "construct" else json.loads(result.body)
    return JSONResponse(
        {
            "question": answer.question,
            "ontology": answer.ontology,
            "query": answer.query,
            "form": answer.form,
            "results": results,
        }
    )
