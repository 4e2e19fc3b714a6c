"""The one way code on the event loop runs blocking work: `await off_loop(fn, *args)`.

Store calls, store helpers (a SELECT through `select`), index and model calls all block: each
runs in the default thread pool, unless the object whose method it is can await its own calls
without a thread (`AwaitsItsCalls`: the worker-process store reads its child's reply on the
event loop, so a slow query does not take one of the few pool threads). Nothing here knows a
store or any other part by name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, ParamSpec, Protocol, TypeVar, cast

P = ParamSpec("P")
T = TypeVar("T")


class AwaitsItsCalls(Protocol):
    """An object that awaits calls of its own blocking methods on the event loop."""

    async def awaited(self, method: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any: ...


async def off_loop(call: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`call(*args, **kwargs)`, awaited without blocking the event loop."""
    owner = getattr(call, "__self__", None)
    if hasattr(owner, "awaited"):  # (an attribute look-up: isinstance of a Protocol costs ~8 µs a call)
        awaited: T = await cast(AwaitsItsCalls, owner).awaited(call, *args, **kwargs)
        return awaited
    return await asyncio.to_thread(call, *args, **kwargs)
