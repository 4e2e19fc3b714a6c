"""`/api/v1/collections/{name}/entities/...`: a person's corrections to entity resolution
(merge, split; write scope) and an entity's aliases with their evidence (read scope)."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import asdict

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag.extraction.curation import Curation, CurationRefused, EntityAliases, UnknownEntity
from sparqlrag.operations.failures import Refused
from sparqlrag.operations.requests import AliasesQuery, EntityMerge, EntitySplit
from sparqlrag.server.auth import authorize
from sparqlrag.server.collections import collection_name
from sparqlrag.server.contracts import parsed, parsed_query
from sparqlrag.server.state import state_of


def _curation(request: Request) -> Curation:
    curation: Curation = state_of(request).services.curation
    return curation


async def _answer(call: Awaitable[EntityAliases]) -> Response:
    """The entity's aliases as JSON; curation's refusals as 404 / 409."""
    try:
        aliases = await call
    except UnknownEntity as error:
        raise Refused(404, "unknown_entity", str(error.args[0])) from None
    except CurationRefused as error:
        raise Refused(409, "curation_refused", str(error.args[0])) from None
    return JSONResponse(asdict(aliases))


async def aliases(request: Request) -> Response:
    """?entity=IRI-or-name: the entity's aliases, the merges that joined them, the names kept apart."""
    authorize(request, "read", per_collection=True)
    collection = collection_name(request)
    asked = parsed_query(request, AliasesQuery)
    return await _answer(_curation(request).aliases(collection, asked.entity.strip()))


async def merge(request: Request) -> Response:
    """{"entity", "other"}: other is entity; answers entity's aliases after the merge."""
    authorize(request, "write", per_collection=True)
    collection = collection_name(request)
    asked = await parsed(request, EntityMerge)
    return await _answer(_curation(request).merge(collection, asked.entity.strip(), asked.other.strip()))


async def split(request: Request) -> Response:
    """{"entity", "alias"}: the alias names something else; answers entity's aliases after the split."""
    authorize(request, "write", per_collection=True)
    collection = collection_name(request)
    asked = await parsed(request, EntitySplit)
    return await _answer(_curation(request).split(collection, asked.entity.strip(), asked.alias.strip()))
