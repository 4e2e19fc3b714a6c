"""`/sparql`: the SPARQL 1.1 Protocol (query and update), and the service description on a bare GET."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from urllib.parse import parse_qs

from pyoxigraph import NamedNode
from starlette.requests import Request
from starlette.responses import Response

from sparqlrag.config import Settings
from sparqlrag.operations import sparql_services
from sparqlrag.operations.access import Access, readable_graphs, remote_refusal
from sparqlrag.operations.deadline import Deadline
from sparqlrag.operations.failures import Refused
from sparqlrag.operations.scopes import Dataset, caller_dataset
from sparqlrag.operations.sparql_services import SERVICE_PATHS, calls_in, endpoint_query, without
from sparqlrag.server.auth import authorize, client_key, granted
from sparqlrag.server.bodies import decode_utf8, read_body
from sparqlrag.server.hang_ups import ended_by_hang_up
from sparqlrag.server.rate_limit import limit_answers
from sparqlrag.server.service_description import service_description
from sparqlrag.server.state import ServerState, state_of
from sparqlrag.server.streams import answer_response
from sparqlrag.store.base import ResultStream
from sparqlrag.store.formats import charset_of, media_type_of
from sparqlrag.store.sparql_text import NotDataUpdate, data_operations, delete_data, insert_data
from sparqlrag.threads import off_loop

FORM = "application/x-www-form-urlencoded"
QUERY_MEDIA_TYPE = "application/sparql-query"
UPDATE_MEDIA_TYPE = "application/sparql-update"
MIN_TIMEOUT = 0.1  # seconds: less is no limit a query could meet (the fuzzer asked for 5e-324)


@dataclass
class Operation:
    """One protocol request, whatever way it was sent."""

    kind: str  # "query" | "update"
    text: str
    params: dict[str, list[str]]
    skeleton: str | None = None  # the text without our services' blocks, once they are evaluated
    time_left: float | None = None  # seconds, once our services have used some of the query's time

    def graphs(self, name: str) -> list[str]:
        """The graphs a dataset parameter names, each an absolute IRI (else 400)."""
        found = self.params.get(name, [])
        for iri in found:
            try:
                NamedNode(iri)
            except ValueError:
                raise Refused(400, "syntax_error", f"{name}: not a valid absolute IRI: {iri[:200]!r}") from None
        return found


def _single(params: dict[str, list[str]], name: str) -> str | None:
    values = params.get(name, [])
    if len(values) > 1:
        raise Refused(400, "bad_request", f"the request has {len(values)} '{name}' parameters; send exactly one")
    return values[0] if values else None


def _operation(params: dict[str, list[str]], direct: tuple[str, str] | None = None) -> Operation | None:
    """The query or update a request carries; None when it carries neither."""
    query, update = _single(params, "query"), _single(params, "update")
    if direct is not None:
        kind, text = direct
        if query is not None or update is not None:
            raise Refused(
                400, "bad_request", f"a direct POST of application/sparql-{kind} cannot also carry query= or update="
            )
        return Operation(kind, text, params)
    if query is not None and update is not None:
        raise Refused(400, "bad_request", "send either query= or update=, not both")
    if query is not None:
        return Operation("query", query, params)
    if update is not None:
        return Operation("update", update, params)
    return None


def _url_params(request: Request) -> dict[str, list[str]]:
    params: dict[str, list[str]] = {}
    for key, value in request.query_params.multi_items():
        params.setdefault(key, []).append(value)
    return params


def _check_utf8_charset(content_type: str) -> None:
    charset = charset_of(content_type)
    if charset not in (None, "utf-8", "utf8"):
        raise Refused(415, "unsupported_charset", f"SPARQL requests must be UTF-8, not {charset}")


async def sparql_endpoint(request: Request) -> Response:
    reading = granted(request)  # ("read", judged by the route table before the text is read; updates need "write")
    operation = await _read_operation(request)
    if operation is None:
        return service_description(request, state_of(request).settings)
    return await _execute(request, operation, reading)


def service_endpoint(service: str) -> Callable[[Request], Awaitable[Response]]:
    """`/sparql/document-rag` or `/sparql/graph-rag`: the SPARQL Protocol for queries whose
    pattern is the service's block, as another engine's `SERVICE <.../sparql/document-rag> { ... }`
    sends it (rdflib and Jena send `SELECT * WHERE { block }`)."""

    async def endpoint(request: Request) -> Response:
        reading = granted(request)
        operation = await _read_operation(request)
        if operation is None or operation.kind != "query":
            told = f"this endpoint evaluates sr:{service} in a query: send query= (updates go to /sparql)"
            raise Refused(400, "bad_request", told)
        operation.text = endpoint_query(operation.text, service)
        return await _execute(request, operation, reading)

    return endpoint


async def _read_operation(request: Request) -> Operation | None:
    """The query or update a protocol request carries; None for a GET with neither."""
    settings: Settings = state_of(request).settings
    params = _url_params(request)
    if request.method in ("GET", "HEAD"):
        if "update" in params:
            raise Refused(405, "method_not_allowed", "SPARQL updates must be sent with POST", {"Allow": "POST"})
        operation = _operation(params)
        if operation is None:
            if given := [name for name in ("default-graph-uri", "named-graph-uri", "timeout") if name in params]:
                verb = "go" if len(given) > 1 else "goes"
                raise Refused(400, "bad_request", f"{' and '.join(given)} {verb} with a query")
        return operation

    content_type = request.headers.get("content-type", "")
    media_type = media_type_of(content_type)
    if media_type not in (FORM, QUERY_MEDIA_TYPE, UPDATE_MEDIA_TYPE):
        raise Refused(
            415,
            "unsupported_media_type",
            f"POST to /sparql needs Content-Type {FORM}, {QUERY_MEDIA_TYPE} or {UPDATE_MEDIA_TYPE}"
            + (f", not {media_type}" if media_type else "; none was given"),
        )
    _check_utf8_charset(content_type)
    body = decode_utf8(await read_body(request, settings.max_sparql_bytes), "request body")
    if media_type == FORM:
        try:
            form = parse_qs(body, keep_blank_values=True, errors="strict")
        except UnicodeDecodeError as error:
            raise Refused(400, "bad_encoding", f"the form is not valid UTF-8 once percent-decoded: {error}") from error
        for key, values in form.items():
            params.setdefault(key, []).extend(values)
        operation = _operation(params)
        if operation is None:
            raise Refused(400, "bad_request", "the form has neither a query= nor an update= field")
    else:
        operation = _operation(params, ("query" if media_type == QUERY_MEDIA_TYPE else "update", body))
    return operation


def _timeout(operation: Operation, settings: Settings) -> float:
    if operation.time_left is not None:
        return max(operation.time_left, MIN_TIMEOUT)
    requested = _single(operation.params, "timeout")
    if requested is None:
        return settings.query_timeout
    try:
        value = float(requested)
    except ValueError:
        raise Refused(400, "bad_request", f"timeout must be a number of seconds, not {requested!r}") from None
    if not MIN_TIMEOUT <= value <= settings.max_query_timeout:
        raise Refused(
            400, "bad_request", f"timeout must be between {MIN_TIMEOUT:g} and {settings.max_query_timeout:g} seconds"
        )
    return value


async def _execute(request: Request, operation: Operation, reading: Access) -> Response:
    """The operation, as one of the client's running queries (query_admission.py) until its
    answer has been sent; `reading` is what the request may read (an update is authorized
    again, for writing)."""
    state = state_of(request)
    counted = state.metrics.sparql(operation.kind)
    access = authorize(request, "write", per_collection=True) if operation.kind == "update" else reading
    async with contextlib.AsyncExitStack() as held:
        await held.enter_async_context(state.queries.admitted(client_key(request)))
        await held.enter_async_context(ended_by_hang_up(request, state.store))
        if operation.kind == "query":
            operation = await _with_services(request, operation, access)
        if access.limited:
            answer = await _execute_limited(request, state, operation, access, counted, held)
        else:
            answer = await _execute_open(request, state, operation, counted, held)
        if isinstance(answer, Response):
            return answer
        return answer_response(answer, held.pop_all() if answer.rest is not None else None)
    raise AssertionError("unreachable")  # (mypy: an exit stack may swallow exceptions)


async def _execute_open(
    request: Request,
    state: ServerState,
    operation: Operation,
    counted: AbstractContextManager[None],
    held: contextlib.AsyncExitStack,
) -> Response | ResultStream:
    """An operation of a token that reaches every collection."""
    settings, store = state.settings, state.store
    if operation.kind == "update":
        with counted:
            await off_loop(
                store.update,
                operation.text,
                base_iri=settings.base_iri,
                using_graphs=operation.graphs("using-graph-uri"),
                using_named_graphs=operation.graphs("using-named-graph-uri"),
            )
        return Response(status_code=204)
    has_dataset = "default-graph-uri" in operation.params or "named-graph-uri" in operation.params
    timeout = _timeout(operation, settings)
    held.enter_context(counted)
    return await store.streamed_query(
        operation.text,
        accept=request.headers.get("accept"),
        base_iri=settings.base_iri,
        default_graphs=operation.graphs("default-graph-uri") if has_dataset else None,
        named_graphs=operation.graphs("named-graph-uri") if has_dataset else None,
        union_default_graph=settings.union_default_graph,
        timeout=timeout,
        max_bytes=settings.max_result_bytes,
    )


async def _execute_limited(
    request: Request,
    state: ServerState,
    operation: Operation,
    access: Access,
    counted: AbstractContextManager[None],
    held: contextlib.AsyncExitStack,
) -> Response | ResultStream:
    """A collection-limited token's operation, narrowed to its collections' graphs.

    A query runs on a dataset of those graphs alone, which replaces any FROM / FROM NAMED in
    its text (and a GRAPH naming another graph finds nothing); dataset parameters may name
    only those graphs, and a half they leave out is all of them. An update may only INSERT
    DATA / DELETE DATA into them, and runs as rebuilt from the quads checked.
    """
    settings = state.settings
    if refused := remote_refusal(operation.skeleton or operation.text):
        raise Refused(403, "forbidden", refused)
    if operation.kind == "update":
        try:
            operations = data_operations(operation.text, settings.base_iri)
        except NotDataUpdate as error:
            raise Refused(
                403,
                "forbidden",
                f"a token limited to some collections may only INSERT DATA or DELETE DATA into their graphs: {error}",
            ) from None
        for _, quads in operations:
            for quad in quads:
                graph = quad.graph_name
                if not isinstance(graph, NamedNode) or not access.may_graph("write", settings.base_iri, graph.value):
                    raise Refused(
                        403,
                        "forbidden",
                        f"the bearer token may not write the graph {str(graph)[:200]}: not one of its collections'",
                    )
        rebuilt = " ;\n".join(
            filter(None, ((insert_data if kind == "INSERT" else delete_data)(quads) for kind, quads in operations))
        )
        if rebuilt:
            with counted:
                await off_loop(state.store.update, rebuilt, base_iri=settings.base_iri)
        return Response(status_code=204)
    readable = await off_loop(readable_graphs, state.services.collections, access)
    asked = [*operation.graphs("default-graph-uri"), *operation.graphs("named-graph-uri")]
    if outside := [g for g in asked if not access.may_graph("read", settings.base_iri, g)]:
        raise Refused(403, "forbidden", f"the bearer token may not read the graph <{outside[0][:200]}>")
    held.enter_context(counted)
    return await state.store.streamed_query(
        operation.text,
        accept=request.headers.get("accept"),
        base_iri=settings.base_iri,
        # a half left out is all the token reads: never an empty list, which a remote store
        # could take as "no dataset given"
        default_graphs=operation.graphs("default-graph-uri") or readable,
        named_graphs=operation.graphs("named-graph-uri") or readable,
        timeout=_timeout(operation, settings),
        max_bytes=settings.max_result_bytes,
    )


def _own_endpoints(request: Request, settings: Settings) -> dict[str, str]:
    """The URLs of our service endpoints, as our base IRI and as this request reached us: a
    SERVICE naming one is evaluated here, never fetched."""
    bases = (settings.base_iri, str(request.base_url))
    return {f"{base}sparql/{path}": service for base in bases for service, path in SERVICE_PATHS.items()}


async def _with_services(request: Request, operation: Operation, access: Access) -> Operation:
    """The query with our SPARQL services evaluated (operations/sparql_services.py), each one
    counted as an answer; unchanged when it calls none."""
    state = state_of(request)
    settings = state.settings
    calls = calls_in(operation.text, _own_endpoints(request, settings))
    if not calls:
        return operation
    skeleton = without(operation.text, calls)
    if access.limited and (refused := remote_refusal(skeleton)):
        raise Refused(403, "forbidden", refused)
    deadline = Deadline(_timeout(operation, settings))
    dataset = await _dataset(state, operation, access)
    text = await sparql_services.with_services(
        state.services,
        operation.text,
        calls,
        access,
        dataset=dataset,
        deadline=deadline,
        before_answer=lambda: limit_answers(request),
    )
    return replace(operation, text=text, skeleton=skeleton, time_left=deadline.left())


async def _dataset(state: ServerState, operation: Operation, access: Access) -> Dataset:
    """The dataset the query runs on, which a service's scope is read from too."""
    defaults, named = operation.graphs("default-graph-uri"), operation.graphs("named-graph-uri")
    own = await caller_dataset(state.services, access)  # (a half the request leaves out: the caller's own)
    if access.limited:
        return Dataset(list(defaults) or own.default_graphs, named or own.named_graphs)
    if "default-graph-uri" in operation.params or "named-graph-uri" in operation.params:
        return Dataset(list(defaults), named)
    return own
