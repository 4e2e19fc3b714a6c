"""off_loop: the one way event-loop code calls the store, embedded or in its worker process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sparqlrag.store import EmbeddedStore, StoreUnavailable, WorkerStore
from sparqlrag.store.base import QueryTimeout
from sparqlrag.store.calls import off_loop

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
