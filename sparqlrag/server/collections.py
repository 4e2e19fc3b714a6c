"""`/api/v1/collections`: create, list with counts, show one, delete with the full cascade;
export and import a collection as a knowledge core (`/api/v1/collections/{name}/core`)."""

from __future__ import annotations

from dataclasses import asdict

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response

from sparqlrag.operations import collections
from sparqlrag.operations.collection import Collection, checked_name, open_collection
from sparqlrag.operations.requests import NewCollection
from sparqlrag.server.auth import check_collection_access, granted
from sparqlrag.server.bodies import scratch_path, spool_body
from sparqlrag.server.contracts import parsed
from sparqlrag.server.state import state_of
from sparqlrag.services import Services


def _services(request: Request) -> Services:
    return state_of(request).services


async def opened(request: Request, named: str | None = None) -> Collection:
    """The collection a request names (`named`, from its body or path, else ?collection=, else
    `default`), for the scope it was authorized with (operations/collection.py: 400, 403, 404)."""
    name = named if named is not None else request.query_params.get("collection")
    return await open_collection(_services(request), name, request.state.access, request.state.scope)


def collection_name(request: Request) -> str:
    """The collection a `/api/v1/collections/{name}/...` path names: 400 for a bad name, 403
    for one the token may not reach."""
    name = checked_name(request.path_params["name"])
    check_collection_access(request, name)
    return name


async def list_collections(request: Request) -> Response:
    access = granted(request)
    listed = await collections.listed(_services(request), access)
    return JSONResponse({"collections": [asdict(info) for info in listed]})


async def create_collection(request: Request) -> Response:
    """`{"name": ..., "ontology"?: ...}`; 201 with Location, 409 when it exists."""
    access = granted(request)
    info = await collections.create(_services(request), await parsed(request, NewCollection), access)
    return JSONResponse(asdict(info), status_code=201, headers={"Location": f"/api/v1/collections/{info.name}"})


async def get_collection(request: Request) -> Response:
    return JSONResponse(asdict(await collections.info(_services(request), collection_name(request))))


async def delete_collection(request: Request) -> Response:
    """Everything of the collection goes. `default` always exists, so it is emptied and stays:
    a 200 that says so, not a 204."""
    name = collection_name(request)
    done = await collections.delete(_services(request), name)
    if name == collections.DEFAULT_COLLECTION:
        return JSONResponse({"collection": name, "emptied": True, "detail": done})
    return Response(status_code=204)


async def export_core(request: Request) -> Response:
    """The collection as a knowledge core (a zip file: TriG graphs, vectors, manifest)."""
    name = collection_name(request)
    path = scratch_path(request, "core")
    try:
        await collections.export_core(_services(request), name, path)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return FileResponse(
        path, media_type=collections.MEDIA_TYPE, filename=f"{name}.core.zip", background=BackgroundTask(path.unlink)
    )


async def import_core(request: Request) -> Response:
    """A knowledge core as the body, imported into the collection the URL names (its IRIs
    moved there when it was exported from another): 201; 400 when it is not a sound core, 409
    when this server cannot take it."""
    name = collection_name(request)
    settings = state_of(request).settings
    path = await spool_body(request, settings.max_upload_bytes, state_of(request).scratch_dir)
    try:
        result = await collections.import_core(_services(request), path, name)
    finally:
        path.unlink(missing_ok=True)
    return JSONResponse(asdict(result), status_code=201, headers={"Location": f"/api/v1/collections/{name}"})
