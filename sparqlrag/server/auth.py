"""Bearer tokens with two scopes: `read`, and `write` (which implies read).

With no tokens configured the server is open; `serve` only allows that on loopback
(Settings.check_bind_address).
"""

from __future__ import annotations

import hmac
from typing import Literal

from starlette.requests import Request

from sparqlrag.config import Settings
from sparqlrag.server.errors import ApiError

Scope = Literal["read", "write"]


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
    kind, _, token = header.partition(" ")
    if kind.lower() != "bearer" or not token.strip():
        raise ApiError(401, "unauthorized", f"this request needs a bearer token with the {scope!r} scope", challenge)
    scopes = token_scopes(settings, token.strip())
    if not scopes:
        raise ApiError(401, "unauthorized", "the bearer token is not valid", challenge)
    if scope not in scopes:
        raise ApiError(403, "forbidden", f"the bearer token lacks the {scope!r} scope needed to change data")
