"""Writes only from our own pages: which Host names the server answers to, and which pages may
make a server without tokens change data.

A server without tokens (the loopback set-up) trusts whoever can reach it, and a browser lets
any page it shows reach it: a form on another site posted `update=DROP ALL` and was obeyed, and
a page on a name that resolved to 127.0.0.1 (DNS rebinding) could read everything. So:
- the `Host` of every request must be one of `allowed_hosts` (by default the loopback names, the
  base IRI's host and the host the server binds), or the request is 421 before any route runs
  (`/healthz` aside: it tells nothing, and health probes name the machine's address);
- a preflight for PUT or DELETE is allowed only to the sites `cors_origins` names (not to `*`);
- without tokens, a write whose `Sec-Fetch-Site` is not same-origin, or whose `Origin` is
  another origin than the server's own (or one of an explicit `cors_origins`), is 403. A client
  that is not a browser sends neither header and is not affected. With tokens a write needs the
  bearer header, which no foreign page can make a browser send without the token itself.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from sparqlrag.config import Settings
from sparqlrag.operations.failures import Refused
from sparqlrag.server.errors import error_response
from sparqlrag.server.middleware import HttpMiddleware

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def allowed_hosts(settings: Settings) -> frozenset[str] | None:
    """The host names (without port, lowercase) requests may name; None: any."""
    if "*" in settings.allowed_hosts:
        return None
    names = {*LOOPBACK_NAMES, *(host.lower() for host in settings.allowed_hosts)}
    names.add((urlsplit(settings.base_iri).hostname or "").lower())
    bound = settings.host.strip("[]").lower()
    if bound not in ("0.0.0.0", "::", ""):
        names.add(bound)
    return frozenset(names)


def host_name(host: str) -> str:
    """`Host` less its port: "[::1]:7878" is "::1", "Example.org:80" is "example.org"."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    name, _, port = host.rpartition(":")
    return name if name and port.isdigit() else host


def _loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class Cors(CORSMiddleware):
    """Starlette's CORS, less the allowing headers on a refused preflight (it sends `*` with its
    400 for a method it does not allow, which reads as though writes were open to every site)."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code != 200:
            for name in [name for name in response.headers if name.startswith("access-control-")]:
                del response.headers[name]
        return response


class HostCheck(HttpMiddleware):
    """421 for a request whose Host header names a host the server does not answer to."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None) -> None:
        super().__init__(app)
        self.hosts = hosts

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.hosts is not None and scope["path"] != "/healthz":  # (probes name the machine's address)
            headers = dict(scope.get("headers") or [])
            name = host_name(headers.get(b"host", b"").decode("latin-1"))
            if name not in self.hosts and not _loopback(name):
                refusal = error_response(
                    421,
                    "host_not_allowed",
                    "this server does not answer to the host this request names; add it to allowed_hosts",
                )
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def check_same_origin(request: Request, settings: Settings) -> None:
    """403 unless a write to a server without tokens comes from its own pages or from a client
    that is not a browser (no Origin, no Sec-Fetch-Site)."""
    site = request.headers.get("sec-fetch-site", "").lower()
    origin = request.headers.get("origin")
    if site in ("same-origin", "none") or (not site and origin is None):
        return
    origin = (origin or "").lower().rstrip("/")
    if origin in {o.lower().rstrip("/") for o in settings.cors_origins if o != "*"}:
        return  # a site the operator trusts
    own = f"{request.url.scheme}://{request.headers.get('host', '')}".lower()
    if origin == own and site not in ("cross-site", "same-site"):  # (a browser without Sec-Fetch-Site)
        return
    raise Refused(
        403,
        "cross_site_write",
        "a server without tokens takes writes only from its own pages or from clients that are not "
        "browsers; this request came from another site (list trusted origins in cors_origins)",
    )
