"""`POST /api/v1/nl-query`: a question becomes a checked SPARQL query over an ontology, which
runs under the query time limit; the answer has the query and its results."""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag.ontology.registry import UnknownOntology
from sparqlrag.operations.failures import Refused
from sparqlrag.operations.requests import NlQuestion
from sparqlrag.queries.nl_query import NlQueryUnavailable, QueryRejected
from sparqlrag.server.auth import authorize, client_key
from sparqlrag.server.collections import collection_of
from sparqlrag.server.contracts import parsed
from sparqlrag.server.rate_limit import limit_answers
from sparqlrag.server.state import state_of
from sparqlrag.store.base import QueryResult
from sparqlrag.store.vocab import InvalidName


async def nl_query(request: Request) -> Response:
    """`{"question", "collection"?, "ontology"?}` -> `{"question", "ontology", "query", "form", "results"}`
    (SPARQL JSON results for SELECT and ASK, Turtle text for CONSTRUCT)."""
    authorize(request, "read")
    limit_answers(request)
    settings = state_of(request).settings
    asked = await parsed(request, NlQuestion)
    collection = await collection_of(request, asked.collection)
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

    try:
        async with state_of(request).queries.admitted(client_key(request)):
            answer = await state_of(request).services.nl_query.ask(
                asked.question, run, collection=collection, ontology=asked.ontology
            )
    except NlQueryUnavailable as error:
        raise Refused(501, "nl_query_unavailable", str(error)) from None
    except QueryRejected as error:
        return JSONResponse({"error": "query_rejected", "detail": str(error), "query": error.query}, status_code=422)
    except (UnknownOntology, InvalidName) as error:
        raise Refused(400, "unknown_ontology", str(error)) from None
    except ValueError as error:
        raise Refused(400, "bad_request", str(error)) from None
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
