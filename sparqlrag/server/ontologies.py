"""`/api/v1/ontologies`: load (upload or PUT), list, fetch in the format a tool asks for, remove;
and the ontology IRI itself, when it lies under the base IRI, answering like a published
ontology (RDF/XML unless the client prefers Turtle, N-Triples or JSON-LD)."""

from __future__ import annotations

from pathlib import PurePath

from pyoxigraph import RdfFormat
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sparqlrag.operations import ontologies
from sparqlrag.operations.failures import Refused
from sparqlrag.operations.ontologies import LoadResult, Ontologies
from sparqlrag.server.auth import authorize
from sparqlrag.server.bodies import bounded, read_body
from sparqlrag.server.errors import described_error_handler, http_exception_handler
from sparqlrag.server.state import state_of
from sparqlrag.store.formats import media_type_of, negotiate, with_charset

# what an ontology is served as; the first is the default (what Protégé and the OWL API ask for). Not
# OWL/XML: it is read, not written, and RDF/XML under its name would be mislabelled
ONTOLOGY_FORMATS: list[tuple[str, RdfFormat]] = [
    ("application/rdf+xml", RdfFormat.RDF_XML),
    ("text/turtle", RdfFormat.TURTLE),
    ("application/n-triples", RdfFormat.N_TRIPLES),
    ("application/ld+json", RdfFormat.JSON_LD),
    ("application/xml", RdfFormat.RDF_XML),
    ("text/plain", RdfFormat.N_TRIPLES),
    ("application/json", RdfFormat.JSON_LD),
]


FORM_OVERHEAD = 64 * 1024  # a multipart body's boundaries, part headers and small fields, beyond the file


def _ontologies(request: Request) -> Ontologies:
    return state_of(request).services.ontologies


async def list_ontologies(request: Request) -> Response:
    return JSONResponse({"ontologies": [info.json() for info in await ontologies.listed(_ontologies(request))]})


async def upload(request: Request) -> Response:
    """POST: multipart (one file; name from ?name= or the file name) or a raw body with ?name=."""
    limit = state_of(request).settings.max_ontology_bytes
    kind = media_type_of(request.headers.get("content-type"))
    name = request.query_params.get("name")
    if kind == "multipart/form-data":
        async with bounded(request, limit + FORM_OVERHEAD).form(max_files=1, max_part_size=limit) as form:
            files = [value for value in form.values() if isinstance(value, UploadFile)]
            if len(files) != 1:
                raise Refused(400, "bad_request", "send one ontology file per request")
            data, filename, kind = await files[0].read(), files[0].filename, media_type_of(files[0].content_type)
            name = name or str(form.get("name") or "") or (PurePath(filename).stem if filename else None)
        if len(data) > limit:
            raise _too_large(limit)
    else:
        data, filename = await read_body(request, limit), None
    if not name:
        raise Refused(400, "bad_request", "name the ontology: ?name=, a 'name' form field, or the file's name")
    return await _load(request, name, data, kind, filename)


async def put(request: Request) -> Response:
    """PUT /api/v1/ontologies/{name}: the body is the ontology, loaded or reloaded under that name."""
    data = await read_body(request, state_of(request).settings.max_ontology_bytes)
    return await _load(
        request, request.path_params["name"], data, media_type_of(request.headers.get("content-type")), None
    )


async def _load(request: Request, name: str, data: bytes, media_type: str, filename: str | None) -> Response:
    replace = request.query_params.get("replace", "false").lower() in ("true", "1", "yes")
    registry = _ontologies(request)
    return _loaded(
        await ontologies.load(registry, name, data, media_type=media_type, filename=filename, replace=replace)
    )


def _loaded(result: LoadResult) -> Response:
    body = result.info.json() | {
        "replaced": result.replaced,
        "unchanged": result.unchanged,
        "warnings": result.warnings,
    }
    status = 200 if result.replaced or result.unchanged else 201
    return JSONResponse(body, status_code=status, headers={"Location": f"/api/v1/ontologies/{result.info.name}"})


def _too_large(limit: int) -> Refused:
    return Refused(413, "body_too_large", f"the ontology is larger than the {limit} byte limit (max_ontology_bytes)")


async def get_ontology(request: Request) -> Response:
    return await _serve(request, request.path_params["name"])


async def delete_ontology(request: Request) -> Response:
    await ontologies.remove(_ontologies(request), request.path_params["name"])
    return Response(status_code=204)


async def published_or_not_found(request: Request, exc: Exception) -> Response:
    """The router's 404: a GET of a URL that is a loaded ontology's IRI (under the base IRI)
    serves the ontology, as its publisher would; anything else is the usual JSON 404."""
    if request.method in ("GET", "HEAD"):
        try:
            authorize(request, "read", per_collection=True)
            iri = state_of(request).settings.base_iri + request.url.path.lstrip("/")
            info = await ontologies.published(_ontologies(request), iri)
            if info is not None:
                return await _serve(request, info.name)
        except Refused as error:
            return await described_error_handler(request, error)
    return await http_exception_handler(request, exc)


async def _serve(request: Request, name: str) -> Response:
    chosen = negotiate(request.headers.get("accept"), ONTOLOGY_FORMATS)
    if chosen is None:
        offered = ", ".join(media for media, _ in ONTOLOGY_FORMATS[:4])
        raise Refused(406, "not_acceptable", f"an ontology is served as {offered}", headers={"Vary": "Accept"})
    media_type, fmt = chosen
    body = await ontologies.serialized(_ontologies(request), name, fmt)
    return Response(body, media_type=with_charset(media_type), headers={"Vary": "Accept"})
