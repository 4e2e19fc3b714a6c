"""Bearer tokens with two scopes: `read`, and `write` (which implies read).

With no tokens configured the server is open; `serve` only allows that on loopback
(Settings.check_bind_address).

A browser following a link cannot send a bearer header, so a read by GET may also carry the
token in a cookie (the pages set it from the token field). Only reads: a cookie goes along
with any request a foreign page makes, so it must never authorise a write. The cookie's name
comes from the base IRI: cookies are per host, not per port, and two servers on one host must
not receive each other's tokens.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Literal

from starlette.requests import Request

from sparqlrag.config import Settings
from sparqlrag.server.errors import ApiError

Scope = Literal["read", "write"]


def token_cookie(settings: Settings) -> str:
    """`sparqlrag_token_` and a short hash of the base IRI."""
    return "sparqlrag_token_" + hashlib.sha256(settings.base_iri.encode()).hexdigest()[:12]


def _matches(token: str, candidates: list[str]) -> bool:
    return any(hmac.compare_digest(token.encode(), candidate.encode()) for candidate in candidates)


def token_scopes(settings: Settings, token: str) -> set[Scope]:
    if _matches(token, settings.write_tokens):
        return {"read", "write"}
    if _matches(token, settings.read_tokens):
        return {"read"}
    return set()


def authorize(request: Request, scope: Scope) -> None:
    """Raise 401 (no or unknown token) or 403 (token lacks the scope) unless the request may act."""
    settings: Settings = request.app.state.settings
    if not settings.auth_enabled:
        return
    challenge = {"WWW-Authenticate": f'Bearer realm="sparqlrag", scope="{scope}"'}
    header = request.headers.get("authorization", "")
    cookie = request.cookies.get(token_cookie(settings), "")
    if not header and cookie and scope == "read" and request.method in ("GET", "HEAD"):
        header = f"Bearer {cookie}"
    kind, _, token = header.partition(" ")
    if kind.lower() != "bearer" or not token.strip():
        raise ApiError(401, "unauthorized", f"this request needs a bearer token with the {scope!r} scope", challenge)
    scopes = token_scopes(settings, token.strip())
    if not scopes:
        raise ApiError(401, "unauthorized", "the bearer token is not valid", challenge)
    if scope not in scopes:
        raise ApiError(403, "forbidden", f"the bearer token lacks the {scope!r} scope needed to change data")
