"""`GET /api/v1/access`: what the request's token may do, so a page can tell a read token (which
it may keep in a cookie for links) from a write token (which it keeps in the tab alone)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag.server.auth import granted
from sparqlrag.server.state import state_of


async def access(request: Request) -> Response:
    """{"auth": false} on a server without tokens; else the collections the token reads and
    writes ("all", or their names)."""
    reach = granted(request)
    if not state_of(request).settings.auth_enabled:
        return JSONResponse({"auth": False})

    def reached(collections: frozenset[str] | None) -> str | list[str]:
        return "all" if collections is None else sorted(collections)

    return JSONResponse({"auth": True, "reads": reached(reach.reads), "writes": reached(reach.writes)})
