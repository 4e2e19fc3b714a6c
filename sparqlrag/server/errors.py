"""JSON errors: `{"error": code, "detail": message}` with a 4xx for anything the client got wrong."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Route
from starlette.types import Message, Receive, Scope, Send

from sparqlrag.extraction.decode_pool import DecoderUnavailable
from sparqlrag.extraction.decoders import DecodeError, DecodeLimitExceeded
from sparqlrag.library.librarian import CollectionBusy, UnknownCollection
from sparqlrag.models.llm import LLMError
from sparqlrag.retrieval.question import QuestionTooLong
from sparqlrag.retrieval.walk import EmptyGraph
from sparqlrag.server.middleware import HttpMiddleware
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
    base.ResultTooLarge: (400, "result_too_large"),
    base.ClientGone: (499, "client_closed_request"),  # (nginx's code; never read: for logs and metrics)
    base.UpdateDatasetConflict: (400, "dataset_conflict"),
    base.RemoteAccessRefused: (403, "remote_access_refused"),
    base.RemoteSourceFailed: (400, "remote_source_failed"),
    base.QueryCrashed: (400, "query_crashed_store"),
    base.GraphNotFound: (404, "graph_not_found"),
    base.NotAcceptable: (406, "not_acceptable"),
    base.QueryTimeout: (503, "query_timeout"),
    base.StoreLocked: (503, "store_locked"),
    base.StoreUnavailable: (503, "store_unavailable"),
    base.StorageFull: (507, "insufficient_storage"),
    base.RemoteStoreFailed: (502, "store_failed"),
    base.StoreInternalError: (500, "internal_error"),
}


def error_response(status: int, error: str, detail: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": error, "detail": detail}, status_code=status, headers=headers)


INTERNAL = "unexpected server error; see the server log"


def described(exc: Exception) -> tuple[int, str, str]:
    """(status, code, detail) for an error a client may see: the message of errors written for
    clients, a fixed one for the rest (their text goes to the log)."""
    if isinstance(exc, ApiError):
        return exc.status, exc.error, exc.detail
    if base.disk_full(exc):  # the store's, or an index's (SQLite), or a file's
        return 507, "insufficient_storage", base.DISK_FULL
    if isinstance(exc, base.StoreError):  # the store's messages are for clients, but an internal error's
        status, error = next(  # along the MRO: a subclass answers as the error it refines
            (STORE_ERROR_STATUS[kind] for kind in type(exc).__mro__ if kind in STORE_ERROR_STATUS),
            (500, "internal_error"),
        )
        return status, error, INTERNAL if error == "internal_error" else str(exc)
    if isinstance(exc, LLMError):  # the model behind an answer failed (quota, auth, overload): say which
        return 502, "model_failed", str(exc)
    for kind, status, error in CLIENT_ERRORS:
        if isinstance(exc, kind):
            return status, error, str(exc)
    return 500, "internal_error", INTERNAL


CLIENT_ERRORS: list[tuple[type[Exception], int, str]] = [
    (UnknownCollection, 404, "collection_not_found"),
    (CollectionBusy, 409, "collection_busy"),
    (EmptyGraph, 409, "empty_graph"),
    (QuestionTooLong, 400, "question_too_long"),
    (DecoderUnavailable, 503, "decoder_unavailable"),
    (DecodeLimitExceeded, 400, "decode_failed"),  # (before DecodeError: it is one)
    (DecodeError, 400, "bad_document"),
]


async def described_error_handler(request: Request, exc: Exception) -> Response:
    status, error, detail = described(exc)
    if status >= 500 and not isinstance(exc, (LLMError, base.QueryTimeout)):  # (a timeout: the client's query)
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return error_response(status, error, detail, exc.headers if isinstance(exc, ApiError) else None)


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


HANDLED: tuple[type[Exception], ...] = (ApiError, base.StoreError, LLMError, *(kind for kind, _, _ in CLIENT_ERRORS))
EXCEPTION_HANDLERS: dict[type[Exception], Callable[[Request, Exception], Awaitable[Response]]] = {
    **dict.fromkeys(HANDLED, described_error_handler),
    HTTPException: http_exception_handler,
}
