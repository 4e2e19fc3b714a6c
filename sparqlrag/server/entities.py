"""`/api/v1/collections/{name}/entities/...`: a person's corrections to entity resolution
(merge, split; write scope) and an entity's aliases with their evidence (read scope)."""

from __future__ import annotations

from dataclasses import asdict

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag.operations import entities
from sparqlrag.operations.requests import AliasesQuery, EntityMerge, EntitySplit
from sparqlrag.server.collections import opened
from sparqlrag.server.contracts import parsed, parsed_query


async def aliases(request: Request) -> Response:
    """?entity=IRI-or-name: the entity's aliases, the merges that joined them, the names kept apart."""
    collection = await opened(request, request.path_params["name"])
    return JSONResponse(asdict(await entities.aliases(collection, parsed_query(request, AliasesQuery))))


async def merge(request: Request) -> Response:
    """{"entity", "other"}: other is entity; answers entity's aliases after the merge."""
    collection = await opened(request, request.path_params["name"])
    return JSONResponse(asdict(await entities.merge(collection, await parsed(request, EntityMerge))))


async def split(request: Request) -> Response:
    """{"entity", "alias"}: the alias names something else; answers entity's aliases after the split."""
    collection = await opened(request, request.path_params["name"])
    return JSONResponse(asdict(await entities.split(collection, await parsed(request, EntitySplit))))
