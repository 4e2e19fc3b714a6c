"""Bearer tokens: what each may do is an Access (operations/access.py).

With no tokens configured the server is open; `serve` only allows that on loopback
(Settings.check_bind_address).

A browser following a link cannot send a bearer header, so a read by GET may also carry a
read token in a cookie (the pages set it from the token field, for a token that cannot write).
Only reads: a cookie goes along with any request a foreign page makes, so it must never
authorise a write; and cookies are per host, not per port, so any server on the same host
receives them: a write token in a cookie is ignored, and the pages keep it in the tab's
session storage (per origin, port included). The cookie's name comes from the base IRI, so two
of our servers on one host do not take each other's.

Every per-client limit (query admission, crash budget, answer rate, decodes) keys on one
identity, fixed by `authorize` from a *verified* credential: the token itself however its
header is spelt (scheme in any case, spaces around it), and the same token from the cookie;
without tokens, the socket's peer (uvicorn reads `X-Forwarded-For` only from `trusted_proxies`).
A made-up header is no new client: an unknown token is 401 before any limit is counted.

A collection-limited token is refused by every route unless the route table says the route
narrows what it does to the token's collections (`per_collection=True`, routes.py); such a
route then checks each collection it touches (`check_collection_access`, or
`operations.collection.open_collection` for a route that names one), so a route that forgets
cannot leak.
"""

from __future__ import annotations

import functools
import hashlib

from starlette.requests import Request

from sparqlrag.config import Settings
from sparqlrag.operations.access import EVERYTHING, VERBS, Access, Scope, token_access
from sparqlrag.operations.failures import Refused
from sparqlrag.server.origins import check_same_origin
from sparqlrag.server.state import state_of


def token_cookie(settings: Settings) -> str:
    """`sparqlrag_token_` and a short hash of the base IRI."""
    return _cookie_name(settings.base_iri)


@functools.cache
def _cookie_name(base_iri: str) -> str:
    return "sparqlrag_token_" + hashlib.sha256(base_iri.encode()).hexdigest()[:12]


def bearer_token(request: Request, scope: Scope) -> str | None:
    """The request's bearer token (or, for a GET read, its cookie); None when it has none."""
    settings: Settings = state_of(request).settings
    kind, token = [*request.headers.get("authorization", "").split(None, 1), "", ""][:2]
    if kind.lower() == "bearer" and token.strip():
        return token.strip()
    cookie = request.cookies.get(token_cookie(settings), "").strip()
    if cookie and scope == "read" and request.method in ("GET", "HEAD") and not kind:
        access = token_access(settings, cookie)
        return cookie if access is None or not access.anywhere("write") else None  # (a write token never rides in one)
    return None


def access_of(settings: Settings, token: str | None, scope: Scope) -> Access:
    """What `token` may do, or 401 (none or unknown) / 403 (no `scope` on any collection)."""
    if not settings.auth_enabled:
        return EVERYTHING
    challenge = {"WWW-Authenticate": f'Bearer realm="sparqlrag", scope="{scope}"'}
    if token is None:
        raise Refused(401, "unauthorized", f"this request needs a bearer token with the {scope!r} scope", challenge)
    access = token_access(settings, token)
    if access is None:
        raise Refused(401, "unauthorized", "the bearer token is not valid", challenge)
    if not access.anywhere(scope):
        raise Refused(403, "forbidden", f"the bearer token lacks the {scope!r} scope needed to {VERBS[scope]} data")
    return access


def authorize(request: Request, scope: Scope, *, per_collection: bool = False) -> Access:
    """Raise 401 or 403 unless the request may act with `scope`; a collection-limited token
    passes only where the route narrows itself to collections (`per_collection`)."""
    settings = state_of(request).settings
    token = bearer_token(request, scope)
    access = access_of(settings, token, scope)
    if scope == "write" and not settings.auth_enabled:
        check_same_origin(request, settings)
    request.state.client = _identity(token if settings.auth_enabled else None, request)
    if access.limited and not per_collection:
        raise Refused(
            403, "forbidden", "the bearer token is limited to some collections, and this request reaches beyond them"
        )
    request.state.access, request.state.scope = access, scope
    return access


def granted(request: Request) -> Access:
    """What the token of a request the route table has judged (`authorize`) may do."""
    access: Access = request.state.access
    return access


def check_collection_access(request: Request, collection: str) -> None:
    """403 unless the authorized token may act on `collection` with the scope it was authorized for."""
    access: Access = request.state.access
    access.check(request.state.scope, collection)


def client_key(request: Request) -> bytes:
    """Who is asking, for per-client limits: what `authorize` verified (so a route must
    authorize before it counts anything against a client)."""
    client: bytes = request.state.client
    return client


def _identity(token: str | None, request: Request) -> bytes:
    """The verified token (hashed), else the peer's address."""
    credential = "token " + token if token is not None else "address " + (request.client.host if request.client else "")
    return hashlib.sha256(credential.encode()).digest()
