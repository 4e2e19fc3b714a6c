"""off_loop: the one way event-loop code calls the store, embedded or in its worker process."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from sparqlrag.store import EmbeddedStore, StoreUnavailable, WorkerStore
from sparqlrag.store.base import QueryTimeout
from sparqlrag.threads import off_loop

SIXTY = "INSERT DATA { " + " ".join(f"<urn:s{i}> <urn:p> {i} ." for i in range(60)) + " }"
SECONDS = (
    "SELECT (COUNT(*) AS ?n) WHERE { " + " ".join(f"?x{i} ?p{i} ?o{i} ." for i in range(4)) + " }"
)  # ~1.5 s on SIXTY
SLOW = (
    "SELECT (COUNT(*) AS ?n) WHERE { VALUES ?a { 1 2 3 4 5 6 7 8 9 10 } "
    + " ".join(f"?x{i} ?p{i} ?o{i} ." for i in range(6))
    + " }"
)


def test_the_worker_store_answers_its_own_methods_and_closes_here(tmp_path: Path) -> None:
    store = WorkerStore(tmp_path / "store", threads=2)
    try:
        asyncio.run(off_loop(store.update, "INSERT DATA { <urn:a> <urn:b> <urn:c> }"))
        assert asyncio.run(off_loop(store.count)) == 1
        assert asyncio.run(off_loop(store.graph_exists, None)) is True
    finally:
        asyncio.run(off_loop(store.close))  # close is the parent's own method, not the child's
    with pytest.raises(StoreUnavailable):
        store.count()


def test_the_embedded_store_runs_in_a_thread(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")
    try:
        asyncio.run(off_loop(store.update, "INSERT DATA { <urn:a> <urn:b> <urn:c> }"))
        assert asyncio.run(off_loop(store.count)) == 1
    finally:
        store.close()


def test_a_query_timeout_reaches_the_worker(tmp_path: Path) -> None:
    store = WorkerStore(tmp_path / "store", threads=2)
    try:
        asyncio.run(
            off_loop(store.update, "INSERT DATA { " + " ".join(f"<urn:s{i}> <urn:p> {i} ." for i in range(60)) + " }")
        )
        with pytest.raises(QueryTimeout):
            asyncio.run(off_loop(store.query, SLOW, timeout=0.5))
        assert asyncio.run(off_loop(store.count)) == 60  # the worker came back
    finally:
        store.close()


def test_a_query_that_cannot_start_before_its_deadline_times_out_without_a_restart(tmp_path: Path) -> None:
    """The one client connection is busy: a query waiting for it past its deadline ends with
    QueryTimeout, and since it never ran, the store process is not stopped for it."""
    store = WorkerStore(tmp_path / "store", threads=1)
    try:
        store.update(SIXTY)
        busy = threading.Thread(target=store.query, args=(SECONDS,), kwargs={"timeout": 60})
        busy.start()
        while not store._table.running():  # the busy query runs in the child
            time.sleep(0.005)
        started = time.monotonic()
        with pytest.raises(QueryTimeout, match="waited past its limit"):
            store.query("ASK {}", timeout=0.3)
        assert time.monotonic() - started < 1.0
        busy.join()
        assert store.restarts == 0
    finally:
        store.close()


def test_a_cancelled_call_frees_its_connection_once_its_reply_is_in(tmp_path: Path) -> None:
    """An awaited query whose caller is cancelled still gets its reply read, so its connection
    (here the only one) serves the next query instead of being lost."""
    store = WorkerStore(tmp_path / "store", threads=1)

    async def cancel_then_ask() -> bool:
        running = asyncio.create_task(off_loop(store.query, SECONDS, timeout=60))
        while not store._table.running():
            await asyncio.sleep(0.005)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        answer = await off_loop(store.query, "ASK { ?s ?p ?o }", timeout=60)
        return answer.body == b'{"head":{},"boolean":true}'

    try:
        store.update(SIXTY)
        assert asyncio.run(cancel_then_ask())
        assert store.restarts == 0 and not store._pending
    finally:
        store.close()
