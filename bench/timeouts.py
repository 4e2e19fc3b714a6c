"""How a query past its time limit is cut off, and how the store serves others meanwhile.

The store's worker process runs a cross-product COUNT with a limit; a second thread asks a
point query in a loop. Prints, per limit, when the caller got QueryTimeout (seconds after it
asked), when the restarted process was ready, and the point reads answered while the slow query
ran (count, per second, p50/p99 latency). The tests check only what happens (a timeout, a
restart, reads answered meanwhile); these are the figures.

    .venv/bin/python bench/timeouts.py [--limits 0.5 1 2] [--markdown]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from report import markdown_table, publish

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sparqlrag.store import QueryTimeout, WorkerStore  # noqa: E402
from tests.conftest import seeded_worker  # noqa: E402  (the store the timeout tests use)

SLOW_QUERY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
POINT_QUERY = "ASK { <http://e/s1> ?p ?o }"


def cut_off(store: WorkerStore, limit: float) -> dict[str, float]:
    latencies: list[float] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            store.query(POINT_QUERY)
            latencies.append(time.perf_counter() - started)

    thread = threading.Thread(target=reader)
    thread.start()
    restarts, started = store.restarts, time.perf_counter()
    try:
        store.query(SLOW_QUERY, timeout=limit)
        raise SystemExit("the slow query finished within its limit: use a smaller --limits")
    except QueryTimeout:
        answered = time.perf_counter() - started
    during = len(latencies)
    with store._state:
        store._state.wait_for(lambda: store.restarts > restarts, timeout=60)
    ready = time.perf_counter() - started
    stop.set()
    thread.join()
    reads = sorted(latencies[:during])
    return {
        "limit_s": limit,
        "timeout_after_s": answered,
        "restarted_after_s": ready,
        "reads_during": during,
        "reads_per_s": during / answered,
        "read_p50_ms": 1000 * statistics.median(reads) if reads else float("nan"),
        "read_p99_ms": 1000 * reads[int(0.99 * (len(reads) - 1))] if reads else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limits", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument("--markdown", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = seeded_worker(Path(folder))
        try:
            figures = [cut_off(store, limit) for limit in args.limits]
        finally:
            store.close()
    header = ["limit s", "timeout after s", "restarted after s", "reads during", "reads/s", "p50 ms", "p99 ms"]
    rows = [
        [
            f"{f['limit_s']:.1f}",
            f"{f['timeout_after_s']:.2f}",
            f"{f['restarted_after_s']:.2f}",
            str(f["reads_during"]),
            f"{f['reads_per_s']:.0f}",
            f"{f['read_p50_ms']:.2f}",
            f"{f['read_p99_ms']:.2f}",
        ]
        for f in figures
    ]
    publish("Query time limits (bench/timeouts.py)", "\n".join(markdown_table(header, rows)), figures, args.markdown)


if __name__ == "__main__":
    main()
