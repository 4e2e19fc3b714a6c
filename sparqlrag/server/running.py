"""The lifetime of a serving process, the HTTP server or `sparqlrag mcp` on stdio: the store and
services opened, what a killed process left put right before anything writes, unfinished
ingests resumed in the background (the process serves meanwhile), and all closed in order."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

from sparqlrag.config import Settings
from sparqlrag.services import Models, Services, remote_store
from sparqlrag.store.base import QuadStore
from sparqlrag.store.data_dir import prepare_data_dir
from sparqlrag.store.worker import WorkerStore
from sparqlrag.threads import off_loop

IO_THREADS = 32


@contextlib.asynccontextmanager
async def running(settings: Settings, models: Models | None = None) -> AsyncIterator[Services]:
    """Services on a WorkerStore in settings.data_dir, or on the store at settings.store_url;
    `models` are loaded here when not given. Blocking calls (a remote store's requests, the
    indexes, the models) run in a pool of IO_THREADS: Python's default of a few threads a core
    let a handful of slow remote queries hold up every other call."""
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(IO_THREADS, thread_name_prefix="sparqlrag"))
    prepare_data_dir(settings.data_dir, settings.base_iri)
    opened: QuadStore = (
        remote_store(settings)
        if settings.store_url
        else await off_loop(
            WorkerStore, settings.store_path, threads=settings.store_threads, allow_remote=settings.allow_remote
        )
    )
    try:
        services = await off_loop(Services.open, settings, opened, None, models)
        try:
            await services.repair()
            resuming = asyncio.create_task(services.recovery.recover())
            try:
                yield services
            finally:
                resuming.cancel()
                await asyncio.gather(resuming, return_exceptions=True)
                await services.pipeline.cancel_background()  # pending markers: the next start resumes them
        finally:
            services.close()
    finally:
        await off_loop(opened.close)
