"""`POST /api/v1/nl-query`: a question becomes a checked SPARQL query over an ontology, which
runs under the query time limit; the answer has the query and its results."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag.ontology.registry import UnknownOntology
from sparqlrag.queries.nl_query import NlQueryUnavailable, QueryRejected
from sparqlrag.retrieval.question import QuestionTooLong
from sparqlrag.server.auth import authorize, client_key
from sparqlrag.server.bodies import read_body
from sparqlrag.server.collections import collection_of
from sparqlrag.server.errors import ApiError
from sparqlrag.server.rate_limit import limit_answers
from sparqlrag.store.base import QueryResult
from sparqlrag.store.vocab import InvalidName

FIELDS = {"question", "collection", "ontology"}


async def nl_query(request: Request) -> Response:
    """`{"question", "collection"?, "ontology"?}` -> `{"question", "ontology", "query", "form", "results"}`
    (SPARQL JSON results for SELECT and ASK, Turtle text for CONSTRUCT)."""
    authorize(request, "read")
    limit_answers(request)
    settings = request.app.state.settings
    try:
        body: dict[str, Any] = json.loads(await read_body(request, settings.max_sparql_bytes))
        if not isinstance(body, dict):
            raise TypeError("the body must be a JSON object")
        if set(body) - FIELDS:
            raise ValueError(f"unknown fields: {', '.join(sorted(set(body) - FIELDS))}")
        if body.get("ontology") is not None and not isinstance(body["ontology"], str):
            raise TypeError("ontology must be the name of a loaded ontology")
    except (ValueError, TypeError) as error:
        raise ApiError(400, "bad_request", f'send {{"question": ..., "collection"?, "ontology"?}}: {error}') from None
    collection = await collection_of(request, body)
    store = request.app.state.store

    def run(query: str, form: str) -> QueryResult:
        accept = "text/turtle" if form == "construct" else "application/sparql-results+json"
        return store.query(
            query,
            accept=accept,
            union_default_graph=True,
            timeout=settings.query_timeout,
            max_bytes=settings.max_result_bytes,
        )

    try:
        async with request.app.state.queries.admitted(client_key(request)):
            answer = await request.app.state.services.nl_query.ask(
                body.get("question"), run, collection=collection, ontology=body.get("ontology")
            )
    except NlQueryUnavailable as error:
        raise ApiError(501, "nl_query_unavailable", str(error)) from None
    except QueryRejected as error:
        return JSONResponse({"error": "query_rejected", "detail": str(error), "query": error.query}, status_code=422)
    except QuestionTooLong as error:
        raise ApiError(400, "question_too_long", str(error)) from None
    except (UnknownOntology, InvalidName) as error:
        raise ApiError(400, "unknown_ontology", str(error)) from None
    except ValueError as error:
        raise ApiError(400, "bad_request", str(error)) from None
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
