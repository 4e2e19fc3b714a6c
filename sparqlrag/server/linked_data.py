"""Dereferenceable entity IRIs (`/id/...`), as linked-data clients expect.

`GET {base}id/C/...` answers 303 See Other: browsers (Accept prefers HTML) go to the entity's
page, `/page/id/...`; RDF clients to its data, `/data/id/...{.ttl,.rdf,.jsonld,.nt}`, in the
syntax they asked for (Turtle when they say `*/*`). Both describe what the entity's
collection knows (queries/describe.py); the page also shows the sources behind each fact.
The Location is relative, so the redirect works behind a proxy that serves the base IRI.
An IRI no fact names is 404.
"""

from __future__ import annotations

import asyncio

from pyoxigraph import RdfFormat, serialize
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from sparqlrag.queries.describe import Description, describe, exists
from sparqlrag.server.auth import authorize
from sparqlrag.server.errors import ApiError
from sparqlrag.server.pages import render
from sparqlrag.store import vocab as v
from sparqlrag.store.formats import negotiate, with_charset

DATA_FORMATS: list[tuple[str, str, RdfFormat]] = [
    ("text/turtle", "ttl", RdfFormat.TURTLE),
    ("application/rdf+xml", "rdf", RdfFormat.RDF_XML),
    ("application/ld+json", "jsonld", RdfFormat.JSON_LD),
    ("application/n-triples", "nt", RdfFormat.N_TRIPLES),
]
OFFERS = [(media, ext) for media, ext, _ in DATA_FORMATS] + [("text/html", "html"), ("application/xhtml+xml", "html")]


def _entity_path(request: Request, prefix: str) -> str:
    """The `id/...` path of the request, as sent (percent-encoding kept: it is part of the IRI)."""
    raw = request.scope.get("raw_path", request.url.path.encode()).decode("latin-1").split("?", 1)[0]
    return raw[len(prefix) :] if raw.startswith(prefix) else raw.lstrip("/")


def _missing(request: Request, path: str) -> ApiError:
    return ApiError(404, "not_found", f"no knowledge names <{request.app.state.settings.base_iri + path}>")


async def _describe(request: Request, path: str) -> Description:
    """The entity at `path` (`id/...`) described; 404 when nothing names it."""
    authorize(request, "read")
    base = request.app.state.settings.base_iri
    description = await asyncio.to_thread(describe, request.app.state.store, base, base + path)
    if description is None:
        raise _missing(request, path)
    return description


def _up(path: str) -> str:
    """The relative way from a path's folder back to the site root ("id/c/x" -> "../../")."""
    return "../" * path.count("/")


async def entity(request: Request) -> Response:
    """303 to the entity's page or data, as the Accept header prefers."""
    path = _entity_path(request, "/")
    authorize(request, "read")
    base = request.app.state.settings.base_iri
    if not await asyncio.to_thread(exists, request.app.state.store, base, base + path):
        raise _missing(request, path)
    chosen = negotiate(request.headers.get("accept"), OFFERS)
    if chosen is None:
        offered = ", ".join(media for media, _ in OFFERS[:-1])
        raise ApiError(406, "not_acceptable", f"an entity is described as {offered}", headers={"Vary": "Accept"})
    target = f"page/{path}" if chosen[1] == "html" else f"data/{path}.{chosen[1]}"
    return RedirectResponse(_up(path) + target, status_code=303, headers={"Vary": "Accept"})


async def entity_data(request: Request) -> Response:
    """The description as RDF, in the syntax the extension names."""
    path = _entity_path(request, "/data/")
    for media, ext, fmt in DATA_FORMATS:
        if path.endswith("." + ext):
            description = await _describe(request, path[: -len(ext) - 1])
            body = serialize(description.triples(), format=fmt, prefixes=v.PREFIXES)  # formats without prefixes ignore them
            return Response(body or b"", media_type=with_charset(media))
    raise ApiError(404, "not_found", "entity data ends in " + ", ".join("." + ext for _, ext, _ in DATA_FORMATS))


async def entity_page(request: Request) -> Response:
    """The description as a page: label, definition, facts in and out, each fact's sources."""
    path = _entity_path(request, "/page/")
    description = await _describe(request, path)
    alternates = [(media, ext) for media, ext, _ in DATA_FORMATS]
    data_url = _up("page/" + path) + "data/" + path
    return render(request, "entity.html", _up("page/" + path), d=description, alternates=alternates, data_url=data_url)

