"""`/api/v1/graph-rag` (JSON, or server-sent events) and `/api/v1/traces[/{id}]`."""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag.retrieval.graph_rag import GraphRagOptions
from sparqlrag.retrieval.question import QuestionTooLong, check_question
from sparqlrag.retrieval.trace import list_traces, read_trace
from sparqlrag.server.auth import authorize
from sparqlrag.server.bodies import read_body
from sparqlrag.server.collections import collection_of
from sparqlrag.server.errors import ApiError
from sparqlrag.server.rate_limit import limit_answers
from sparqlrag.server.streams import sse, wants_stream
from sparqlrag.services import Services
from sparqlrag.store.vocab import Iris

TRACE_ID = re.compile(r"[0-9a-f]{32}")  # what Trace mints (uuid4 hex); anything else cannot name one


def _services(request: Request) -> Services:
    return request.app.state.services


async def graph_rag(request: Request) -> Response:
    """`{"question", "collection"?, "mode"?: "graph" | "hybrid", "stream"?, and any of
    GraphRagOptions' limits}`. "hybrid" fuses Document RAG's passages with the graph's (as
    `ask --mode hybrid`)."""
    authorize(request, "read")
    limit_answers(request)
    try:
        body: dict[str, Any] = json.loads(await read_body(request, request.app.state.settings.max_sparql_bytes))
        if not isinstance(body, dict):
            raise TypeError("the body must be a JSON object")
        question = check_question(body.get("question"))
        options = GraphRagOptions(**{name: body[name] for name in GraphRagOptions.names() if name in body})
        unknown = set(body) - set(GraphRagOptions.names()) - {"question", "collection", "stream", "mode"}
        if unknown:
            raise ValueError(f"unknown fields: {', '.join(sorted(unknown))}")
        if body.get("mode", "graph") not in ("graph", "hybrid"):
            raise ValueError(f'mode is "graph" or "hybrid", not {body["mode"]!r}')
    except QuestionTooLong as error:
        raise ApiError(400, "question_too_long", str(error)) from None
    except (ValueError, TypeError) as error:
        fields = ", ".join(GraphRagOptions.names())
        raise ApiError(400, "bad_request", f'send {{"question": ..., "collection"?, "mode"?, "stream"?, {fields}?}}: {error}') from None
    services = _services(request)
    collection = await collection_of(request, body)
    if not await run_in_threadpool(services.vectors.count, collection, "entities"):
        raise ApiError(409, "empty_graph", f"collection {collection!r} has no entities to answer from: ingest documents first")
    also = await services.document_rag.retrieve(collection, question, k=options.k) if body.get("mode") == "hybrid" else None
    if wants_stream(body, request.headers.get("accept", "")):
        return sse(services.graph_rag.stream(collection, question, options, also=also))
    answer = await services.graph_rag.answer(collection, question, options, also=also)
    return JSONResponse(answer.json())


async def traces(request: Request) -> Response:
    authorize(request, "read")
    services = _services(request)
    limit = request.query_params.get("limit", "50")
    if not limit.isdigit() or not 1 <= int(limit) <= 1000:
        raise ApiError(400, "bad_request", "limit is a number from 1 to 1000")
    iris = Iris(services.settings.base_iri, await collection_of(request))
    return JSONResponse({"traces": await run_in_threadpool(list_traces, services.store, iris, int(limit))})


async def trace(request: Request) -> Response:
    authorize(request, "read")
    services = _services(request)
    iris = Iris(services.settings.base_iri, await collection_of(request))
    trace_id = request.path_params["id"]
    found = await run_in_threadpool(read_trace, services.store, iris, trace_id) if TRACE_ID.fullmatch(trace_id) else None
    if found is None:
        raise ApiError(404, "trace_not_found", f"no trace {request.path_params['id']!r} in this collection")
    return JSONResponse(found)
