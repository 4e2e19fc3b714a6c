"""JSON errors: `{"error": code, "detail": message}` with a 4xx for anything the client got wrong."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Route
from starlette.types import Message, Receive, Scope, Send

from sparqlrag.operations.failures import INTERNAL, USER_FAILURES, Refused, described, unexpected
from sparqlrag.server.middleware import HttpMiddleware

log = logging.getLogger("sparqlrag.server")


def error_response(
    status: int,
    error: str,
    detail: str,
    headers: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse({"error": error, "detail": detail, **(extra or {})}, status_code=status, headers=headers)


async def described_error_handler(request: Request, exc: Exception) -> Response:
    status, error, detail = described(exc)
    if unexpected(exc, status):
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    if isinstance(exc, Refused):
        return error_response(status, error, detail, exc.headers, exc.extra)
    return error_response(status, error, detail)


async def http_exception_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    error = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    headers = exc.headers
    if exc.status_code == 405:  # every method of the path: routing names only the first route's
        headers = {**(headers or {}), "Allow": ", ".join(_allowed(request))}
    return error_response(exc.status_code, error, str(exc.detail), headers)


def _allowed(request: Request) -> list[str]:
    """The methods some route of the app answers on this request's path (several routes may
    share a path, one per method)."""
    methods: set[str] = set()
    for route in request.app.routes:
        if isinstance(route, Route) and route.matches(request.scope)[0] != Match.NONE:
            methods |= route.methods or set()
    return sorted(methods)


class UnexpectedErrors(HttpMiddleware):
    """The last handler, innermost of the middleware: an error nothing else handles is a 500
    with a fixed message, its traceback in the log. (Starlette's own handler for `Exception`
    raises it again after answering, and uvicorn then drops the connection: clients saw a reset.)"""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception:
            if started:  # half an answer is out: only dropping the connection tells the client
                raise
            log.exception("%s %s failed", scope["method"], scope["path"])
            await error_response(500, "internal_error", INTERNAL)(scope, receive, send)


EXCEPTION_HANDLERS: dict[type[Exception], Callable[[Request, Exception], Awaitable[Response]]] = {
    **dict.fromkeys(USER_FAILURES, described_error_handler),
    HTTPException: http_exception_handler,
}
