"""JSON errors: `{"error": code, "detail": message}` with a 4xx for anything the client got wrong."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Route

from sparqlrag.library.librarian import CollectionBusy, UnknownCollection
from sparqlrag.models.llm import LLMError
from sparqlrag.retrieval.walk import EmptyGraph
from sparqlrag.store import base

log = logging.getLogger("sparqlrag.server")


class ApiError(Exception):
    """An error the handler wants the client to see, with its HTTP status."""

    def __init__(self, status: int, error: str, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail
        self.headers = headers


STORE_ERROR_STATUS: dict[type[Exception], tuple[int, str]] = {
    base.QuerySyntaxError: (400, "syntax_error"),
    base.DataSyntaxError: (400, "invalid_rdf"),
    base.QueryEvaluationError: (400, "evaluation_error"),
    base.UpdateDatasetConflict: (400, "dataset_conflict"),
    base.RemoteAccessRefused: (403, "remote_access_refused"),
    base.RemoteSourceFailed: (400, "remote_source_failed"),
    base.QueryCrashed: (400, "query_crashed_store"),
    base.GraphNotFound: (404, "graph_not_found"),
    base.NotAcceptable: (406, "not_acceptable"),
    base.QueryTimeout: (503, "query_timeout"),
    base.StoreLocked: (503, "store_locked"),
    base.StoreUnavailable: (503, "store_unavailable"),
    base.RemoteStoreFailed: (502, "store_failed"),
    base.StoreInternalError: (500, "internal_error"),
}


def error_response(status: int, error: str, detail: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": error, "detail": detail}, status_code=status, headers=headers)


async def api_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.error, exc.detail, exc.headers)


INTERNAL = "unexpected server error; see the server log"


async def store_error_handler(request: Request, exc: Exception) -> Response:
    """The store's messages are written for clients, but for an internal error's (the log's)."""
    status, error = STORE_ERROR_STATUS.get(type(exc), (500, "internal_error"))
    if status >= 500:
        log.error("%s %s failed: %s", request.method, request.url.path, exc)
    return error_response(status, error, INTERNAL if error == "internal_error" else str(exc))


async def unknown_collection_handler(request: Request, exc: Exception) -> Response:
    return error_response(404, "collection_not_found", str(exc))


async def collection_busy_handler(request: Request, exc: Exception) -> Response:
    return error_response(409, "collection_busy", str(exc))


async def empty_graph_handler(request: Request, exc: Exception) -> Response:
    return error_response(409, "empty_graph", str(exc))


async def llm_error_handler(request: Request, exc: Exception) -> Response:
    """The model behind an answer failed (quota, auth, overload after retries): say which."""
    return error_response(502, "model_failed", str(exc))


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


async def unexpected_error_handler(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response(500, "internal_error", INTERNAL)


EXCEPTION_HANDLERS = {
    ApiError: api_error_handler,
    base.StoreError: store_error_handler,
    UnknownCollection: unknown_collection_handler,
    CollectionBusy: collection_busy_handler,
    EmptyGraph: empty_graph_handler,
    LLMError: llm_error_handler,
    HTTPException: http_exception_handler,
    Exception: unexpected_error_handler,
}
