"""Bearer tokens: what each may do is an Access (server/access.py).

With no tokens configured the server is open; `serve` only allows that on loopback
(Settings.check_bind_address).

A browser following a link cannot send a bearer header, so a read by GET may also carry the
token in a cookie (the pages set it from the token field). Only reads: a cookie goes along
with any request a foreign page makes, so it must never authorise a write. The cookie's name
comes from the base IRI: cookies are per host, not per port, and two servers on one host must
not receive each other's tokens.

A collection-limited token is refused by every route unless the route says it narrows what it
does to the token's collections (`per_collection=True`); such a route then checks each
collection it touches (`check_collection_access`, which `collection_of` calls), so a route
that forgets cannot leak.
"""

from __future__ import annotations

import functools
import hashlib

from starlette.requests import Request

from sparqlrag.config import Settings
from sparqlrag.server.access import EVERYTHING, Access, Scope, token_access
from sparqlrag.server.errors import ApiError
from sparqlrag.server.state import state_of

VERBS = {"read": "read", "write": "change"}


def token_cookie(settings: Settings) -> str:
    """`sparqlrag_token_` and a short hash of the base IRI."""
    return _cookie_name(settings.base_iri)


@functools.cache
def _cookie_name(base_iri: str) -> str:
    return "sparqlrag_token_" + hashlib.sha256(base_iri.encode()).hexdigest()[:12]


def bearer_token(request: Request, scope: Scope) -> str | None:
    """The request's bearer token (or, for a GET read, its cookie); None when it has none."""
    settings: Settings = state_of(request).settings
    header = request.headers.get("authorization", "")
    cookie = request.cookies.get(token_cookie(settings), "")
    if not header and cookie and scope == "read" and request.method in ("GET", "HEAD"):
        header = f"Bearer {cookie}"
    kind, _, token = header.partition(" ")
    return token.strip() if kind.lower() == "bearer" and token.strip() else None


def access_of(settings: Settings, token: str | None, scope: Scope) -> Access:
    """What `token` may do, or 401 (none or unknown) / 403 (no `scope` on any collection)."""
    if not settings.auth_enabled:
        return EVERYTHING
    challenge = {"WWW-Authenticate": f'Bearer realm="sparqlrag", scope="{scope}"'}
    if token is None:
        raise ApiError(401, "unauthorized", f"this request needs a bearer token with the {scope!r} scope", challenge)
    access = token_access(settings, token)
    if access is None:
        raise ApiError(401, "unauthorized", "the bearer token is not valid", challenge)
    if not access.anywhere(scope):
        raise ApiError(403, "forbidden", f"the bearer token lacks the {scope!r} scope needed to {VERBS[scope]} data")
    return access


def authorize(request: Request, scope: Scope, *, per_collection: bool = False) -> Access:
    """Raise 401 or 403 unless the request may act with `scope`; a collection-limited token
    passes only where the route narrows itself to collections (`per_collection`)."""
    access = access_of(state_of(request).settings, bearer_token(request, scope), scope)
    if access.limited and not per_collection:
        raise ApiError(
            403, "forbidden", "the bearer token is limited to some collections, and this request reaches beyond them"
        )
    request.state.access, request.state.scope = access, scope
    return access


def check_collection_access(request: Request, collection: str) -> None:
    """403 unless the authorized token may act on `collection` with the scope it was authorized for."""
    access: Access = request.state.access
    scope: Scope = request.state.scope
    if not access.may(scope, collection):
        raise ApiError(403, "forbidden", f"the bearer token may not {VERBS[scope]} collection {collection!r}")


def client_key(request: Request) -> bytes:
    """Who is asking, for per-client limits: the token (hashed), else the client's address."""
    credential = request.headers.get("authorization") or request.cookies.get(token_cookie(state_of(request).settings))
    if not credential:
        credential = "address " + (request.client.host if request.client else "")
    return hashlib.sha256(credential.encode()).digest()
