"""The starlette application: routes, middleware, and the store's lifetime."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.middleware import Middleware

from sparqlrag.config import Settings
from sparqlrag.operations.access import check_grants
from sparqlrag.server import (
    ontologies,
    pages,
)
from sparqlrag.server.errors import EXCEPTION_HANDLERS, UnexpectedErrors
from sparqlrag.server.mcp_endpoint import McpEndpoint
from sparqlrag.server.metrics import Metrics, MetricsMiddleware
from sparqlrag.server.origins import Cors, HostCheck, allowed_hosts
from sparqlrag.server.query_admission import QueryAdmission
from sparqlrag.server.rate_limit import AnswerRateLimit
from sparqlrag.server.request_guard import RequestGuard
from sparqlrag.server.routes import routes
from sparqlrag.server.running import running
from sparqlrag.server.security_headers import SecurityHeaders
from sparqlrag.server.state import ServerState, app_state
from sparqlrag.services import Models
from sparqlrag.store.data_dir import scratch_dir

WRITES = ["PUT", "DELETE"]


def create_app(settings: Settings, models: Models | None = None) -> Starlette:
    """The app; it runs a WorkerStore on settings.data_dir for its lifetime, or speaks to the
    store at settings.store_url. `models` are loaded at startup when not given."""
    check_grants(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with running(settings, models) as services, assistant.lifespan():
            app_state(app).opened = services
            yield

    assistant = McpEndpoint(settings, lambda: app_state(app).services)

    app = Starlette(
        routes=routes(),
        middleware=[
            Middleware(MetricsMiddleware),
            Middleware(SecurityHeaders, script_origins=pages.script_origins()),
            Middleware(RequestGuard, body_timeout=settings.body_timeout, send_timeout=settings.send_timeout),
            Middleware(HostCheck, hosts=allowed_hosts(settings)),
            Middleware(
                Cors,
                allow_origins=settings.cors_origins,
                # any site may read; a site may write (PUT, DELETE) only when named in cors_origins
                allow_methods=["GET", "HEAD", "POST", "OPTIONS"] + ([] if "*" in settings.cors_origins else WRITES),
                allow_headers=["*"],
                expose_headers=["Location", "Content-Type"],
            ),
            Middleware(UnexpectedErrors),
        ],
        exception_handlers={**EXCEPTION_HANDLERS, 404: ontologies.published_or_not_found},
        lifespan=lifespan,
    )
    app.state.server = ServerState(
        settings,
        assistant,
        Metrics(app),
        AnswerRateLimit(settings.answer_rate),
        QueryAdmission(settings.max_concurrent_queries, settings.query_crash_budget),
        QueryAdmission(settings.max_concurrent_uploads, 0, "uploads", "max_concurrent_uploads"),
        scratch_dir(settings.data_dir),
    )
    return app
