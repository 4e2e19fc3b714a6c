"""The one way code on the event loop runs blocking work: `await off_loop(fn, *args)`.

Store calls, store helpers (a SELECT through `select`), index and model calls all block. A
method of the worker-process store is awaited on the worker's reply, so no thread waits while
the child evaluates (a slow query does not take one of the few pool threads); everything else
runs in the default thread pool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import ParamSpec, TypeVar

from pyoxigraph import RdfFormat

from sparqlrag.store.base import Graph, QuadStore, QueryResult, ResultStream
from sparqlrag.store.worker import WorkerStore

P = ParamSpec("P")
T = TypeVar("T")


async def streamed_query(
    store: QuadStore,
    sparql: str,
    *,
    accept: str | None,
    base_iri: str | None,
    default_graphs: Sequence[Graph] | None,
    named_graphs: Sequence[str] | None,
    union_default_graph: bool = False,
    timeout: float | None,
    max_bytes: int | None,
) -> ResultStream:
    """A client's query: from a worker store its result streams as it is written (never whole
    in memory); any other store answers it whole."""
    if isinstance(store, WorkerStore):
        return await store.stream(
            sparql,
            accept=accept,
            base_iri=base_iri,
            default_graphs=default_graphs,
            named_graphs=named_graphs,
            union_default_graph=union_default_graph,
            timeout=timeout,
            max_bytes=max_bytes,
        )
    whole = await off_loop(
        store.query,
        sparql,
        accept=accept,
        base_iri=base_iri,
        default_graphs=default_graphs,
        named_graphs=named_graphs,
        union_default_graph=union_default_graph,
        timeout=timeout,
        max_bytes=max_bytes,
    )
    return ResultStream(whole)


async def streamed_graph(store: QuadStore, graph: Graph, format: RdfFormat, media_type: str) -> ResultStream:
    """A graph in `format` (its media type `media_type`): from a worker store it streams as it is
    written; any other store answers it whole."""
    if isinstance(store, WorkerStore):
        return await store.stream_graph(graph, format, media_type)
    return ResultStream(QueryResult("graph", media_type, await off_loop(store.serialize_graph, graph, format)))


async def off_loop(call: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`call(*args, **kwargs)`, awaited without blocking the event loop."""
    store = getattr(call, "__self__", None)
    if isinstance(store, WorkerStore):
        return await store.awaited(call, *args, **kwargs)
    return await asyncio.to_thread(call, *args, **kwargs)
