"""A query that kills the store process fails once with 400 and is never sent again; everyone
else keeps being served (store/crash_report.py, store/worker.py)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sparqlrag.store import StoreUnavailable, WorkerStore
from sparqlrag.store import supervisor as supervisor_module
from sparqlrag.store.base import QueryCrashed
from tests.conftest import LiveServer, seeded_worker, unstartable
from tests.security.conftest import READ, WRITE, snapshot, sparql, still_serving

NESTED_QUERY = "SELECT * WHERE " + "{" * 10_000 + "}" * 10_000  # the probe's
NESTED_UPDATE = "INSERT { <http://s> <http://p> 1 } WHERE " + "{" * 100_000 + "}" * 100_000


def test_the_probe_query_fails_once_and_others_are_served(hostile: LiveServer) -> None:
    store = hostile.store
    restarts = store.restarts
    answers: list[int] = []
    stop = threading.Event()

    def steady_reader() -> None:
        with hostile.client(READ, timeout=30) as client:
            while not stop.is_set():
                answers.append(
                    client.get("/sparql", params={"query": "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }"}).status_code
                )

    reader = threading.Thread(target=steady_reader)
    reader.start()
    try:
        until(lambda: len(answers) > 0)  # the reader is being served
        first = sparql(hostile, READ, "query", NESTED_QUERY, timeout=300)  # the deadline the probe raised
        again = sparql(hostile, READ, "query", NESTED_QUERY)
        still_serving(hostile)
    finally:
        stop.set()
        reader.join()
    for response in (first, again):
        assert response.status_code == 400, response.text
        assert response.json()["error"] == "query_crashed_store"
    assert store.restarts == restarts + 1  # one crash: the query was neither resent nor run again
    assert answers and set(answers) == {200}  # reads beside it were resent to the new process
    write = sparql(hostile, WRITE, "update", "INSERT DATA { GRAPH <http://after/crash> { <http://s> <http://p> 1 } }")
    assert write.status_code == 204
    still_serving(hostile)


def test_a_killing_update_fails_once_and_writes_nothing(hostile: LiveServer) -> None:
    before, restarts = snapshot(hostile), hostile.store.restarts
    for _ in range(2):
        response = sparql(hostile, WRITE, "update", NESTED_UPDATE)
        assert response.status_code == 400 and response.json()["error"] == "query_crashed_store"
    still_serving(hostile)  # the culprit is answered before the restart; this waits for it
    assert hostile.store.restarts == restarts + 1
    assert snapshot(hostile) == before


def until(condition: Callable[[], bool]) -> None:
    """Waits (a minute at most) for `condition`: what the test orders its threads by."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, "not within a minute"
        time.sleep(0.01)


def sent(worker: WorkerStore) -> int:
    """Calls sent to the store process and not answered yet."""
    return len(worker._pending)


def started(worker: WorkerStore) -> int:
    """Calls the store process has begun to run (its table of running calls, crash_report.py)."""
    return len(worker._table.running())


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[WorkerStore]:
    opened = seeded_worker(tmp_path)
    yield opened
    opened.close()


def test_a_write_waiting_for_the_lock_is_resent_and_a_running_one_is_reported(worker: WorkerStore) -> None:
    """A write that had not begun when the process died is applied once after the restart; one
    that was running may or may not have applied, and says so."""
    slow = (
        "INSERT { <http://x> <http://count> ?n } "
        "WHERE { { SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } } }"
    )
    outcomes: dict[str, object] = {}

    def run(name: str, update: str) -> None:
        try:
            worker.update(update)
            outcomes[name] = "applied"
        except StoreUnavailable as error:
            outcomes[name] = error

    running = threading.Thread(target=run, args=("running", slow))
    running.start()
    until(lambda: started(worker) == 1)  # the slow write runs: it holds the write lock
    queued = threading.Thread(target=run, args=("queued", "INSERT DATA { <http://q> <http://p> 1 }"))
    queued.start()
    until(lambda: sent(worker) == 2)
    with pytest.raises(QueryCrashed):
        worker.query(NESTED_QUERY)
    running.join()
    queued.join()
    assert isinstance(outcomes["running"], StoreUnavailable) and "check whether it applied" in str(outcomes["running"])
    assert outcomes["queued"] == "applied"
    assert worker.query("SELECT (COUNT(*) AS ?n) { <http://q> ?p ?o }", accept="text/csv").body.split() == [b"n", b"1"]


def test_without_a_dump_the_only_running_call_is_blamed(worker: WorkerStore) -> None:
    """Killed outright (as the kernel does when memory runs out): no signal handler runs, and
    the one call that was running is taken for the culprit."""
    slow = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
    failure: list[BaseException] = []

    def run() -> None:
        try:
            worker.query(slow)
        except QueryCrashed as error:
            failure.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    until(lambda: started(worker) == 1)  # killed while it runs (one not yet begun would be sent again)
    os.kill(worker._worker.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
    thread.join()
    assert len(failure) == 1
    assert worker.count() == 2000  # served again (this waits for the restart)
    with pytest.raises(QueryCrashed):  # and it is refused from now on, without running
        worker.query(slow)
    assert worker.restarts == 1


def test_a_failed_restart_fails_calls_fast_and_is_tried_again(
    worker: WorkerStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the store cannot be opened every call fails at once (a 503 over HTTP) instead of
    waiting; once it can, the next call after RETRY_START starts it and is served."""
    monkeypatch.setattr(supervisor_module, "RETRY_START", 0.5)
    with unstartable(worker, tmp_path / "store"):
        for call in (worker.count, lambda: worker.update("INSERT DATA { <http://late> <http://p> 1 }")):
            with pytest.raises(StoreUnavailable, match="could not restart"):
                call()
    monkeypatch.setattr(supervisor_module, "RETRY_START", 0.0)  # as if RETRY_START had passed
    assert worker.count() == 2000  # started again, with nothing of the refused write
    assert worker.restarts == 1
