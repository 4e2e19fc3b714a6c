"""The graph explorer's JSON (`/api/v1/collections/{name}/graph`, `.../graph/fact`,
`.../entities`): what the `/explore` page draws, for any other tool too; read scope, the
collection under the caller's grants."""

from __future__ import annotations

from dataclasses import asdict

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag.operations import explore
from sparqlrag.operations.requests import EntitySearch, FactQuery, GraphQuery
from sparqlrag.server.collections import opened
from sparqlrag.server.contracts import parsed_query


async def graph(request: Request) -> Response:
    """?entity=IRI&depth=&limit=&relation=&document=: the entity's neighbourhood, bounded."""
    collection = await opened(request, request.path_params["name"])
    return JSONResponse(asdict(await explore.graph(collection, parsed_query(request, GraphQuery))))


async def fact(request: Request) -> Response:
    """?subject=&predicate=&object=: the fact, named, with the chunks it was extracted from."""
    collection = await opened(request, request.path_params["name"])
    return JSONResponse((await explore.fact(collection, parsed_query(request, FactQuery))).as_json())


async def entities(request: Request) -> Response:
    """?search=&limit=: entities by name, as a question's grounding finds them."""
    collection = await opened(request, request.path_params["name"])
    return JSONResponse(asdict(await explore.entities(collection, parsed_query(request, EntitySearch))))
