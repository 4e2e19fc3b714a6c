"""`/api/v1/graph-rag` (JSON, or server-sent events) and `/api/v1/traces[/{id}]`."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from sparqlrag.operations import answers
from sparqlrag.operations.requests import GraphRagRequest, TracesQuery
from sparqlrag.server.collections import opened
from sparqlrag.server.contracts import parsed, parsed_query
from sparqlrag.server.linked_data import ALTERNATES
from sparqlrag.server.pages import render
from sparqlrag.server.rate_limit import limit_answers
from sparqlrag.server.streams import sse, wants_stream
from sparqlrag.store.formats import negotiate

# a trace IRI's representations: JSON first (what a client saying */* has always had), its page, its RDF
TRACE_OFFERS = [("application/json", "json"), ("text/html", "html"), *ALTERNATES]


async def graph_rag(request: Request) -> Response:
    """A GraphRagRequest (operations/requests.py), answered by operations/answers.py."""
    limit_answers(request)
    asked = await parsed(request, GraphRagRequest)
    collection = await opened(request, asked.collection)
    if wants_stream(asked.stream, request.headers.get("accept", "")):
        return sse(await answers.stream_graph(collection, asked))
    return JSONResponse((await answers.ask_graph(collection, asked)).as_json())


async def traces(request: Request) -> Response:
    asked = parsed_query(request, TracesQuery)
    return JSONResponse({"traces": await answers.list_traces(await opened(request), asked)})


async def trace(request: Request) -> Response:
    return JSONResponse((await answers.trace(await opened(request), request.path_params["id"])).as_json())


async def trace_resource(request: Request) -> Response:
    """A trace's IRI, `{base}trace/C/ID`, dereferenced: 303 to its page for a browser, to its
    RDF (the trace graph's triples about it) for an RDF client, to its JSON otherwise."""
    found = await opened(request, request.path_params["collection"])
    collection, trace_id = found.name, request.path_params["id"]
    await answers.check_trace(found, trace_id)
    chosen = negotiate(request.headers.get("accept"), TRACE_OFFERS) or TRACE_OFFERS[0]
    target = {
        "json": f"../../api/v1/traces/{trace_id}?collection={collection}",
        "html": f"../../page/trace/{collection}/{trace_id}",
    }.get(chosen[1], f"../../data/trace/{collection}/{trace_id}.{chosen[1]}")
    return RedirectResponse(target, status_code=303, headers={"Vary": "Accept"})


async def trace_page(request: Request) -> Response:
    collection = await opened(request, request.path_params["collection"])
    found = await answers.trace(collection, request.path_params["id"])
    return render("trace.html", "../../../", t=found.as_json(), collection=collection.name)
