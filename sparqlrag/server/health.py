"""`/healthz`: liveness, for load balancers and orchestrators (no token)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag import __version__
from sparqlrag.operations.failures import Refused
from sparqlrag.server.state import state_of
from sparqlrag.threads import off_loop


async def healthz(request: Request) -> Response:
    """Liveness: answered without waiting behind running queries (QuadStore.healthy)."""
    if not await off_loop(state_of(request).store.healthy):
        raise Refused(503, "store_unavailable", "the store cannot serve now; see the server log")
    return JSONResponse({"status": "ok", "version": __version__})
