"""The one way code on the event loop runs blocking work: `await off_loop(fn, *args)`.

Store calls, store helpers (a SELECT through `select`), index and model calls all block. A
method of the worker-process store is awaited on the worker's reply, so no thread waits while
the child evaluates (a slow query does not take one of the few pool threads); everything else
runs in the default thread pool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from sparqlrag.store.worker import WorkerStore

P = ParamSpec("P")
T = TypeVar("T")


async def off_loop(call: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`call(*args, **kwargs)`, awaited without blocking the event loop."""
    store = getattr(call, "__self__", None)
    if isinstance(store, WorkerStore):
        return await store.awaited(call, *args, **kwargs)
    return await asyncio.to_thread(call, *args, **kwargs)
