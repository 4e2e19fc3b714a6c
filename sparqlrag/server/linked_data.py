"""Dereferenceable IRIs, as linked-data clients expect: entities (`/id/...`), the relations
minted from text (`/rel/...`), the documents and chunks facts came from (`/doc/...`), and the
reifiers of facts (`/stmt/...`, RDF only; a trace's IRI is answers.trace_resource's, and its
RDF is here too, at `/data/trace/...`).

`GET {base}id/C/...` answers 303 See Other: browsers (Accept prefers HTML) go to the page,
`/page/id/...`; RDF clients to the data, `/data/id/...{.ttl,.rdf,.jsonld,.nt}`, in the syntax
they asked for (Turtle when they say `*/*`). `/rel/...` and `/doc/...` work the same way; a
document's IRI also offers its original file (`/file/doc/...`, originals.py) to a client asking
for its media type (`Accept: application/pdf`). The descriptions
come from operations/linked_data.py; an entity's page shows the sources behind each fact, a chunk's
page the facts extracted from it. The Location is relative, so the redirect works behind a
proxy that serves the base IRI. An IRI the store does not know is 404.
"""

from __future__ import annotations

from typing import Any

from pyoxigraph import Quad, RdfFormat, serialize
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from sparqlrag.operations import linked_data as described
from sparqlrag.operations.failures import Refused
from sparqlrag.server.auth import check_collection_access, granted
from sparqlrag.server.pages import render
from sparqlrag.server.state import state_of
from sparqlrag.store import vocab
from sparqlrag.store.formats import negotiate, with_charset
from sparqlrag.store.reification import as_rdf11

DATA_FORMATS: list[tuple[str, str, RdfFormat]] = [
    ("text/turtle", "ttl", RdfFormat.TURTLE),
    ("application/rdf+xml", "rdf", RdfFormat.RDF_XML),
    ("application/ld+json", "jsonld", RdfFormat.JSON_LD),
    ("application/n-triples", "nt", RdfFormat.N_TRIPLES),
]
RDF12_FORMATS = (RdfFormat.TURTLE, RdfFormat.N_TRIPLES)  # the others cannot write a triple term yet
ALTERNATES = [(media, ext) for media, ext, _ in DATA_FORMATS]  # what a page links as its data
OFFERS = ALTERNATES + [("text/html", "html"), ("application/xhtml+xml", "html")]
# the first segment of a dereferenceable path: its page's template (the others are described in RDF only)
TEMPLATES = {"id": "entity.html", "rel": "relation.html", "doc": "source.html"}


def iri_path(request: Request, prefix: str) -> str:
    """The `id/...`, `rel/...` or `doc/...` path of the request, as sent (percent-encoding kept: it is part of the
    IRI)."""
    raw = request.scope.get("raw_path", request.url.path.encode()).decode("latin-1").split("?", 1)[0]
    return raw[len(prefix) :] if raw.startswith(prefix) else raw.lstrip("/")


def reach(request: Request, path: str) -> frozenset[str] | None:
    """The collections the token may read (None: all), after a 403 when `path` is an IRI of a
    collection (`id/C/...`, `doc/C/...`) it may not read. A relation's facts are then shown from
    those collections alone."""
    access = granted(request)
    kind, _, rest = path.partition("/")
    if kind in described.OF_A_COLLECTION:
        check_collection_access(request, rest.split("/", 1)[0])
    return access.reads


async def _describe(request: Request, path: str) -> tuple[Any, str | None]:
    """What the IRI of `path` (`id/...`, `rel/...`, `doc/...`, `stmt/...`, `trace/...`) is
    described as, and its page's template (none: RDF only); 404 when unknown."""
    reads = reach(request, path)
    found = await described.description(state_of(request).services, path, reads)
    return found, TEMPLATES.get(described.kind_of(path))


def _up(path: str) -> str:
    """The relative way from a path's folder back to the site root ("id/c/x" -> "../../")."""
    return "../" * path.count("/")


async def resource(request: Request) -> Response:
    """303 to the page or data of an entity, relation, document or chunk, as the Accept header
    prefers; an alias's to those of the entity it stands for; a statement's to its data."""
    path = iri_path(request, "/")
    reads = reach(request, path)
    services = state_of(request).services
    paged = described.kind_of(path) in TEMPLATES
    info = await described.document_info(services, path)  # (its file is offered)
    if info is None:
        await described.check_known(services, path, reads)
    shown = await described.canonical_path(services, path)  # an alias's: the entity's
    offers = OFFERS if paged else ALTERNATES
    if info is not None:
        offers = offers + [(info.media_type, "file")]  # last: `*/*` still means Turtle
    chosen = negotiate(request.headers.get("accept"), offers)
    if chosen is None:
        offered = ", ".join(media for media, _ in offers if media != "application/xhtml+xml")
        raise Refused(406, "not_acceptable", f"this IRI is described as {offered}", headers={"Vary": "Accept"})
    target = {"html": f"page/{shown}", "file": f"file/{shown}"}.get(chosen[1], f"data/{shown}.{chosen[1]}")
    return RedirectResponse(_up(path) + target, status_code=303, headers={"Vary": "Accept"})


async def data(request: Request) -> Response:
    """The description as RDF, in the syntax the extension names."""
    path = iri_path(request, "/data/")
    for media, ext, fmt in DATA_FORMATS:
        if path.endswith("." + ext):
            description, _ = await _describe(request, path[: -len(ext) - 1])
            triples = description.triples()
            if fmt not in RDF12_FORMATS:  # a trace's or statement's triple terms, as RDF 1.1 reification
                triples = [quad.triple for quad in as_rdf11(Quad(t.subject, t.predicate, t.object) for t in triples)]
            body = serialize(triples, format=fmt, prefixes=vocab.PREFIXES)  # formats without prefixes ignore them
            return Response(body or b"", media_type=with_charset(media))
    raise Refused(404, "not_found", "data URLs end in " + ", ".join("." + ext for _, ext, _ in DATA_FORMATS))


async def page(request: Request) -> Response:
    """The description as a page."""
    path = iri_path(request, "/page/")
    description, template = await _describe(request, path)
    if template is None:  # described in RDF only
        raise Refused(404, "not_found", f"no knowledge names <{state_of(request).settings.base_iri + path}>")
    root = _up("page/" + path)
    return render(template, root, d=description, alternates=ALTERNATES, data_url=f"{root}data/{path}")
