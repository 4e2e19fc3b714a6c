"""The graph explorer's JSON (`/api/v1/collections/{name}/graph`, `.../graph/fact`,
`.../entities`): what the `/explore` page draws, for any other tool too; read scope, the
collection under the caller's grants."""

from __future__ import annotations

from dataclasses import asdict

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag.operations import explore
from sparqlrag.operations.requests import EntitySearch, FactQuery, GraphQuery
from sparqlrag.server.auth import client_key
from sparqlrag.server.collections import opened
from sparqlrag.server.contracts import parsed_query
from sparqlrag.server.state import state_of


async def graph(request: Request) -> Response:
    """?entity=IRI&depth=&limit=&relation=&document=: the entity's neighbourhood, bounded; one
    of the client's running queries while it is drawn (query_admission.py)."""
    collection = await opened(request, request.path_params["name"])
    asked = parsed_query(request, GraphQuery)
    async with state_of(request).queries.admitted(client_key(request)):
        return JSONResponse(asdict(await explore.graph(collection, asked)))


async def fact(request: Request) -> Response:
    """?subject=&predicate=&object=: the fact, named, with the chunks it was extracted from."""
    collection = await opened(request, request.path_params["name"])
    return JSONResponse((await explore.fact(collection, parsed_query(request, FactQuery))).as_json())


async def entities(request: Request) -> Response:
    """?search=&limit=: entities by name, as a question's grounding finds them."""
    collection = await opened(request, request.path_params["name"])
    return JSONResponse(asdict(await explore.entities(collection, parsed_query(request, EntitySearch))))
