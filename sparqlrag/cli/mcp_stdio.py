"""`sparqlrag mcp`: the MCP server (server/mcp_servers.py) on stdin/stdout, for an assistant that
starts it as a child process (Claude Desktop, Claude Code). It opens the data directory as the
HTTP server does, so it runs instead of a server on that directory, not beside it.

When the settings hold tokens, `SPARQLRAG_TOKEN` names the one it acts with, and that token's
grants hold for every call, as over HTTP; without tokens it may do everything, as a loopback
server may.
"""

from __future__ import annotations

import argparse
import asyncio
import os

from sparqlrag.cli.session import CliError, Session, load_models
from sparqlrag.config import Settings
from sparqlrag.operations.access import Access, check_grants
from sparqlrag.operations.failures import Refused
from sparqlrag.server.auth import access_of
from sparqlrag.server.mcp_servers import McpServers
from sparqlrag.server.running import running
from sparqlrag.services import Models

TOKEN_VARIABLE = "SPARQLRAG_TOKEN"


def mcp(session: Session, args: argparse.Namespace) -> None:
    settings = session.settings
    token = os.environ.get(TOKEN_VARIABLE) or None
    if settings.auth_enabled and token is None:
        raise CliError(f"the settings hold tokens: set {TOKEN_VARIABLE} to the one this MCP server acts with")
    try:
        check_grants(settings)
        access = access_of(settings, token, "read")
    except ValueError as error:
        raise CliError(str(error)) from None
    except Refused as error:
        raise CliError(f"{TOKEN_VARIABLE}: {error.detail}") from None
    asyncio.run(_serve(settings, load_models(settings), access))


async def _serve(settings: Settings, models: Models, access: Access) -> None:
    async with running(settings, models) as services:
        servers = McpServers(settings.base_iri, lambda: services, caller=lambda context: access)
        await (servers.writer if access.anywhere("write") else servers.reader).run_stdio_async()
