"""`/api/v1/graph-rag` (JSON, or server-sent events) and `/api/v1/traces[/{id}]`."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from sparqlrag.retrieval.trace import list_traces, trace_exists
from sparqlrag.retrieval.trace_json import read_trace
from sparqlrag.server.auth import authorize
from sparqlrag.server.collections import collection_of
from sparqlrag.server.contracts import GraphRagRequest, TracesQuery, parsed, parsed_query
from sparqlrag.server.errors import ApiError
from sparqlrag.server.linked_data import ALTERNATES
from sparqlrag.server.pages import render
from sparqlrag.server.rate_limit import limit_answers
from sparqlrag.server.state import state_of
from sparqlrag.server.streams import sse, wants_stream
from sparqlrag.services import Services
from sparqlrag.store.calls import off_loop
from sparqlrag.store.formats import negotiate
from sparqlrag.store.vocab import Iris

TRACE_ID = re.compile(r"[0-9a-f]{32}")  # what Trace mints (uuid4 hex); anything else cannot name one
# a trace IRI's representations: JSON first (what a client saying */* has always had), its page, its RDF
TRACE_OFFERS = [("application/json", "json"), ("text/html", "html"), *ALTERNATES]


def _services(request: Request) -> Services:
    return state_of(request).services


async def graph_rag(request: Request) -> Response:
    """A GraphRagRequest (server/contracts.py); "evidence" is the default mode, as `ask`'s."""
    authorize(request, "read", per_collection=True)
    limit_answers(request)
    asked = await parsed(request, GraphRagRequest)
    services = _services(request)
    collection = await collection_of(request, asked.collection)
    if asked.mode == "graph" and not await off_loop(services.vectors.count, collection, "entities"):
        raise ApiError(
            409, "empty_graph", f"collection {collection!r} has no entities to answer from: ingest documents first"
        )
    if wants_stream(asked.stream, request.headers.get("accept", "")):
        return sse(services.graph_rag.stream(collection, asked.question, asked.options, asked.mode))
    answer = await services.graph_rag.answer(collection, asked.question, asked.options, asked.mode)
    return JSONResponse(answer.json())


async def traces(request: Request) -> Response:
    authorize(request, "read", per_collection=True)
    services, asked = _services(request), parsed_query(request, TracesQuery)
    iris = Iris(services.settings.base_iri, await collection_of(request))
    return JSONResponse({"traces": await off_loop(list_traces, services.store, iris, asked.limit)})


def _missing(trace_id: str) -> ApiError:
    return ApiError(404, "trace_not_found", f"no trace {trace_id!r} in this collection")


async def _read(request: Request, collection: str, trace_id: str) -> dict[str, Any]:
    services = _services(request)
    iris = Iris(services.settings.base_iri, collection)
    found = await off_loop(read_trace, services.store, iris, trace_id) if TRACE_ID.fullmatch(trace_id) else None
    if found is None:
        raise _missing(trace_id)
    return found


async def trace(request: Request) -> Response:
    authorize(request, "read", per_collection=True)
    return JSONResponse(await _read(request, await collection_of(request), request.path_params["id"]))


async def trace_resource(request: Request) -> Response:
    """A trace's IRI, `{base}trace/C/ID`, dereferenced: 303 to its page for a browser, to its
    RDF (the trace graph's triples about it) for an RDF client, to its JSON otherwise."""
    authorize(request, "read", per_collection=True)
    collection = await collection_of(request, request.path_params["collection"])
    trace_id, services = request.path_params["id"], _services(request)
    iris = Iris(services.settings.base_iri, collection)
    if not TRACE_ID.fullmatch(trace_id) or not await off_loop(trace_exists, services.store, iris, trace_id):
        raise _missing(trace_id)
    chosen = negotiate(request.headers.get("accept"), TRACE_OFFERS) or TRACE_OFFERS[0]
    target = {
        "json": f"../../api/v1/traces/{trace_id}?collection={collection}",
        "html": f"../../page/trace/{collection}/{trace_id}",
    }.get(chosen[1], f"../../data/trace/{collection}/{trace_id}.{chosen[1]}")
    return RedirectResponse(target, status_code=303, headers={"Vary": "Accept"})


async def trace_page(request: Request) -> Response:
    authorize(request, "read", per_collection=True)
    collection = await collection_of(request, request.path_params["collection"])
    found = await _read(request, collection, request.path_params["id"])
    return render("trace.html", "../../../", t=found, collection=collection)
