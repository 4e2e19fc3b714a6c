"""`/mcp`: the MCP servers of server/mcp_servers.py over streamable HTTP.

The bearer token is judged as on every other route (401 without one, 403 without the read
scope), then the request goes to the MCP server its token gets: with the write tool when it may
write somewhere, without it otherwise. Sessions are stateless: every request carries its own
token, and every tool call is judged by it; so the route takes POST alone (a stateless server
has no stream to open on GET nor session to end on DELETE: 405, as the protocol allows). A
server without tokens listens on loopback only,
so there the SDK's DNS-rebinding guard admits loopback Host headers alone (and the base IRI's).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from urllib.parse import urlsplit

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from sparqlrag.config import Settings
from sparqlrag.operations.access import Access
from sparqlrag.operations.failures import Refused
from sparqlrag.server.auth import authorize, client_key
from sparqlrag.server.mcp_servers import McpServers
from sparqlrag.server.origins import check_same_origin
from sparqlrag.server.state import state_of
from sparqlrag.services import Services
from sparqlrag.store.formats import media_type_of

LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]


def _request(context: Context) -> Request:
    request = context.request_context.request
    assert isinstance(request, Request), "over HTTP every MCP message comes with its request"
    return request


def _caller(context: Context) -> Access:
    """The Access `McpEndpoint` judged this very request's token to have."""
    access: Access = _request(context).state.access
    return access


class McpEndpoint:
    """The ASGI app at `/mcp`; `lifespan()` runs its session managers while the app runs."""

    def __init__(self, settings: Settings, services: Callable[[], Services]) -> None:
        self.servers = McpServers(
            settings.base_iri,
            services,
            caller=_caller,
            before_answer=lambda context: state_of(_request(context)).answer_limit.check(_request(context)),
            admitted=lambda context: state_of(_request(context)).queries.admitted(client_key(_request(context))),
        )
        security = _transport_security(settings)
        self.reader = _manager(self.servers.reader, security)
        self.writer = _manager(self.servers.writer, security)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with self.reader.run(), self.writer.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        access = authorize(request, "read", per_collection=True)
        if not state_of(request).settings.auth_enabled:  # (every call may write: only our pages, or no browser)
            check_same_origin(request, state_of(request).settings)
        if media_type_of(request.headers.get("content-type")) != "application/json":
            raise Refused(415, "unsupported_media_type", "an MCP message is JSON: send Content-Type application/json")
        manager = self.writer if access.anywhere("write") else self.reader
        await manager.handle_request(scope, receive, send)


def _manager(server: MCPServer, security: TransportSecuritySettings | None) -> StreamableHTTPSessionManager:
    server.streamable_http_app(stateless_http=True, json_response=True, transport_security=security)
    return server.session_manager


def _transport_security(settings: Settings) -> TransportSecuritySettings | None:
    if settings.auth_enabled:
        return None
    named = urlsplit(settings.base_iri).netloc
    hosts = [*LOOPBACK_HOSTS, named]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{host}" for host in hosts] + [f"https://{named}"],
    )
