"""A route of the app as the route table (routes.py) declares it: path, method, handler, the
scope a token needs and its OpenAPI operation; made into a Starlette route whose handler runs
only after the token is judged for that scope."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from sparqlrag.operations.access import Scope as TokenScope
from sparqlrag.server.auth import authorize

Handler = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Endpoint:
    """One path and method. `scope`: what a token needs, checked before the handler runs (None:
    no token, for the pages' shells and the health check); `per_collection`: a token limited to
    some collections may call it (the handler narrows itself to them); `doc`: its OpenAPI
    operation (`api_schemas.operation`; None: not part of the API, a page)."""

    path: str
    method: str
    handler: Handler | ASGIApp
    scope: TokenScope | None = "read"
    doc: dict[str, Any] | None = None
    per_collection: bool = True
    asgi: bool = False  # the handler is an ASGI app (it judges its token itself, with the same scope)
    judges_token: bool = False  # the handler judges its token itself, with the same scope (to refuse in its own shape)


def _guarded(endpoint: Endpoint) -> Handler:
    """The handler, after the token is judged for the endpoint's scope (a 401 or 403 before anything else)."""
    handler, scope, per_collection = cast(Handler, endpoint.handler), endpoint.scope, endpoint.per_collection

    @functools.wraps(handler)
    async def guarded(request: Request) -> Response:
        if scope is not None:
            authorize(request, scope, per_collection=per_collection)
        return await handler(request)

    return guarded


def route(endpoint: Endpoint) -> Route:
    judged = endpoint.asgi or endpoint.judges_token
    return Route(endpoint.path, endpoint.handler if judged else _guarded(endpoint), methods=[endpoint.method])
