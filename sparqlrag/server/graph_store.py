"""`/store`: the SPARQL 1.1 Graph Store HTTP Protocol, plus whole-dataset GET/PUT/POST.

Graphs are named indirectly (`/store?graph=IRI`, `/store?default`) or directly: the request
path `/store/a/b` names the graph `{base_iri}store/a/b`. `/store` with neither addresses
the whole dataset (TriG / N-Quads); a POST of triples there creates a new graph and answers
201 with its IRI in Location.
"""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path

from pyoxigraph import RdfFormat
from starlette.background import BackgroundTask
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import FileResponse, Response

from sparqlrag.config import Settings
from sparqlrag.operations.access import Scope
from sparqlrag.operations.failures import Refused
from sparqlrag.server.auth import client_key, granted
from sparqlrag.server.bodies import scratch_path, spool_body
from sparqlrag.server.state import state_of
from sparqlrag.server.streams import answer_response
from sparqlrag.store.base import Graph
from sparqlrag.store.embedded import check_syntax
from sparqlrag.store.formats import (
    DATASET_FORMATS,
    GRAPH_FORMATS,
    TRIPLE_FORMATS,
    media_type_of,
    negotiate,
    rdf_format_for,
    rdf_format_for_path,
    with_charset,
)
from sparqlrag.store.reification import rewrite_as_rdf11
from sparqlrag.store.sparql_text import iri_ref
from sparqlrag.threads import off_loop

ALL = "all"  # the whole dataset, as opposed to one graph


def _target(request: Request, settings: Settings) -> Graph | str:
    """The graph a request names (None = default graph) or ALL for the dataset."""
    params = request.query_params
    # The graph IRI keeps the path's percent-encoding, so take it from the raw request path.
    direct = (
        request.scope.get("raw_path", b"").decode("latin-1").partition("/store/")[2]
        if "path" in request.path_params
        else ""
    )
    named = params.getlist("graph")
    if len(named) > 1:
        raise Refused(400, "bad_request", "name one graph: the request has several graph= parameters")
    if sum(bool(x) for x in (direct, named, "default" in params)) > 1:
        raise Refused(400, "bad_request", "name the graph once: use the path, ?graph=IRI or ?default")
    if direct:
        iri = settings.base_iri + "store/" + direct
        iri_ref(iri)  # raises a clear error for characters an IRI cannot hold
        return iri
    if named:
        iri_ref(named[0])  # raises a clear error for a malformed IRI
        return named[0]
    if "default" in params:
        return None
    return ALL


def _upload_format(content_type: str | None, allowed: list[tuple[str, RdfFormat]], where: str) -> RdfFormat:
    fmt = rdf_format_for(content_type)
    if fmt is None or fmt not in [f for _, f in allowed]:
        names = ", ".join(sorted({m for m, _ in allowed}))
        given = media_type_of(content_type) or "no Content-Type"
        raise Refused(415, "unsupported_media_type", f"{where} accepts {names}; the request sent {given}")
    return fmt


async def graph_store(request: Request) -> Response:
    settings: Settings = state_of(request).settings
    reading = request.method in ("GET", "HEAD")
    scope: Scope = "read" if reading else "write"
    access = granted(request)  # (judged for the method's scope before the request, by the route table)
    target = _target(request, settings)
    if not access.everywhere(scope) and (
        target in (None, ALL) or not access.may_graph(scope, settings.base_iri, target)
    ):
        raise Refused(
            403,
            "forbidden",
            f"the bearer token is limited to some collections: name one of their graphs, {settings.base_iri}graph/C...",
        )
    if reading:  # as one of the client's queries (query_admission.py) until the answer is out
        async with contextlib.AsyncExitStack() as held:
            await held.enter_async_context(state_of(request).queries.admitted(client_key(request)))
            return await (_get_dataset(request) if target == ALL else _get_graph(request, target, held))
        raise AssertionError("unreachable")  # (mypy: an exit stack may swallow exceptions)
    if request.method == "DELETE":
        if target == ALL:
            raise Refused(400, "bad_request", "DELETE needs a graph: ?graph=IRI, ?default or a graph path")
        await off_loop(state_of(request).store.drop_graph, target)
        return Response(status_code=204)
    if target == ALL:
        return await _write_dataset(request, replace=request.method == "PUT")
    return await _write_graph(request, target, replace=request.method == "PUT")


async def _get_graph(request: Request, graph: Graph, held: contextlib.AsyncExitStack) -> Response:
    chosen = negotiate(request.headers.get("accept"), TRIPLE_FORMATS)
    if chosen is None:
        raise Refused(
            406, "not_acceptable", "a graph is available as " + ", ".join(sorted({m for m, _ in TRIPLE_FORMATS}))
        )
    media_type, fmt = chosen
    if _rdf11(request):
        return await _dump_file(request, media_type, fmt, graph, rdf11=True)
    state = state_of(request)
    timeout = state.settings.query_timeout
    answer = await state.store.streamed_graph(graph, fmt, with_charset(media_type), timeout)
    return answer_response(answer, held.pop_all() if answer.rest is not None else None)


async def _get_dataset(request: Request) -> Response:
    chosen = negotiate(request.headers.get("accept"), DATASET_FORMATS)
    if chosen is None:
        raise Refused(406, "not_acceptable", "the dataset is available as application/trig or application/n-quads")
    media_type, fmt = chosen
    return await _dump_file(request, media_type, fmt, ALL, rdf11=_rdf11(request))


def _rdf11(request: Request) -> bool:
    """`?reification=rdf11`: reifiers written as RDF 1.1 reification (store/reification.py)."""
    asked = request.query_params.get("reification", "rdf12")
    if asked not in ("rdf11", "rdf12"):
        raise Refused(
            400, "bad_request", f'reification is "rdf12" (triple terms, the default) or "rdf11", not {asked!r}'
        )
    return asked == "rdf11"


async def _dump_file(request: Request, media_type: str, fmt: RdfFormat, graph: Graph | str, *, rdf11: bool) -> Response:
    """The dataset or a graph written to a scratch file and sent from it (in RDF 1.1 form when asked)."""
    path = scratch_path(request, "dump")
    try:
        if rdf11:
            nquads = scratch_path(request, "dump")
            try:
                await off_loop(state_of(request).store.dump, nquads, RdfFormat.N_QUADS, graph)
                await off_loop(rewrite_as_rdf11, nquads, path, fmt)
            finally:
                nquads.unlink(missing_ok=True)
        else:
            await off_loop(state_of(request).store.dump, path, fmt, graph)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return FileResponse(
        path, media_type=with_charset(media_type), headers={"Vary": "Accept"}, background=BackgroundTask(path.unlink)
    )


async def _write_graph(request: Request, graph: Graph, *, replace: bool) -> Response:
    """PUT replaces a graph, POST merges into it (multipart/form-data: one RDF file a part)."""
    settings: Settings = state_of(request).settings
    store = state_of(request).store
    base_iri = graph or settings.base_iri
    parts = await _uploaded_parts(request, settings)
    try:
        if len(parts) > 1:  # each load is atomic; check all parts first so none lands alone
            for path, fmt in parts:
                await off_loop(check_syntax, path, fmt, base_iri)
        existed = await off_loop(store.graph_exists, graph)
        for index, (path, fmt) in enumerate(parts):
            if replace and index == 0:  # a large graph goes in bulk, as a large dataset does (README, "HTTP")
                bulk = len(parts) == 1 and path.stat().st_size > settings.bulk_load_bytes
                await off_loop(store.replace_graph, graph, path, fmt, base_iri, bulk)
            else:
                await off_loop(store.add_to_graph, graph, path, fmt, base_iri)
    finally:
        for path, _ in parts:
            path.unlink(missing_ok=True)
    return Response(status_code=204 if existed else 201)


async def _uploaded_parts(request: Request, settings: Settings) -> list[tuple[Path, RdfFormat]]:
    """The body as (temp file, format) pairs: one for a plain upload, one a part for multipart."""
    content_type = request.headers.get("content-type")
    if media_type_of(content_type) != "multipart/form-data":
        fmt = _upload_format(content_type, TRIPLE_FORMATS, "a graph")
        return [(await spool_body(request, settings.max_upload_bytes, state_of(request).scratch_dir), fmt)]
    declared = request.headers.get("content-length")
    if declared is None or not declared.isdigit():
        raise Refused(411, "length_required", "multipart uploads need a Content-Length header")
    if int(declared) > settings.max_upload_bytes:
        raise Refused(
            413, "body_too_large", f"the request body is larger than the {settings.max_upload_bytes} byte limit"
        )
    parts: list[tuple[Path, RdfFormat]] = []
    async with request.form(max_files=1000, max_fields=1000) as form:
        try:
            for _, value in form.multi_items():
                if not isinstance(value, UploadFile):
                    raise Refused(400, "bad_request", "each multipart part must be an RDF file")
                part_type = value.content_type
                if not part_type or media_type_of(part_type) == "application/octet-stream":
                    with contextlib.suppress(ValueError):
                        part_type = rdf_format_for_path(Path(value.filename or "")).media_type
                fmt = _upload_format(part_type, TRIPLE_FORMATS, "a multipart part")
                path = scratch_path(request, "part")
                path.write_bytes(await value.read())
                parts.append((path, fmt))
        except BaseException:
            for path, _ in parts:
                path.unlink(missing_ok=True)
            raise
    if not parts:
        raise Refused(400, "bad_request", "the multipart body has no parts")
    return parts


async def _write_dataset(request: Request, *, replace: bool) -> Response:
    """PUT replaces the whole dataset; POST merges quads, or creates a new graph from triples.

    Large uploads use the bulk loader after a strict syntax check, so bad data changes
    nothing; `?no_transaction` skips the check for speed (a syntax error part-way then leaves
    the quads before it loaded), as Oxigraph's parameter of that name does.
    """
    settings: Settings = state_of(request).settings
    store = state_of(request).store
    allowed = DATASET_FORMATS if replace else GRAPH_FORMATS
    fmt = _upload_format(request.headers.get("content-type"), allowed, f"{request.method} /store")
    if not fmt.supports_datasets and not replace:
        graph = f"{settings.base_iri}store/{uuid.uuid4().hex}"
        await _write_graph(request, graph, replace=True)
        return Response(status_code=201, headers={"Location": graph})
    unchecked = "no_transaction" in request.query_params  # Oxigraph's name for the same trade
    path = await spool_body(request, settings.max_upload_bytes, state_of(request).scratch_dir)
    try:
        bulk = unchecked or path.stat().st_size > settings.bulk_load_bytes
        await off_loop(
            store.load,
            path,
            fmt,
            graph=None,
            base_iri=settings.base_iri,
            replace=replace,
            bulk=bulk,
            checked=not unchecked,
        )
    finally:
        path.unlink(missing_ok=True)
    return Response(status_code=204)
