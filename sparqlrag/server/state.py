"""What the server keeps for its requests, read through one typed accessor (`state_of`)
rather than as untyped attributes of `app.state` all over the server."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from starlette.applications import Starlette
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp

from sparqlrag.config import Settings
from sparqlrag.services import Services
from sparqlrag.store.base import QuadStore, StoreUnavailable

if TYPE_CHECKING:  # these modules read the state themselves
    from sparqlrag.server.metrics import Metrics
    from sparqlrag.server.query_admission import QueryAdmission
    from sparqlrag.server.rate_limit import AnswerRateLimit


@dataclass
class ServerState:
    settings: Settings
    assistant: ASGIApp  # the MCP endpoint (mcp_endpoint.McpEndpoint), which the route table's /mcp hands on to
    metrics: Metrics
    answer_limit: AnswerRateLimit
    queries: QueryAdmission
    uploads: QueryAdmission
    scratch_dir: Path
    opened: Services | None = None  # set by the lifespan once the store and models are open

    @property
    def services(self) -> Services:
        if self.opened is None:
            raise StoreUnavailable("the server is still starting")
        return self.opened

    @property
    def store(self) -> QuadStore:
        return self.services.store


def app_state(app: Starlette) -> ServerState:
    return cast(ServerState, app.state.server)


def state_of(connection: HTTPConnection) -> ServerState:
    """The state of the app serving this request."""
    return app_state(connection.app)
