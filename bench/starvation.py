"""Can one read token's slow queries starve the server? (issue 35, hole 4)

`sparqlrag serve` with 2,000 triples; one read token sends --queries cartesian COUNTs at once,
each with ?timeout=--timeout; while they run (and past their deadline, when the store process
is stopped and restarted), a sampler thread per probe asks every 0.2 s: `ASK {}` with another read token, `ASK {}`
with the slow token itself, `/healthz`, and a Graph RAG question (the server's own store calls).
Prints, per probe, its answers' statuses and p50 / max latency, and how the slow queries ended.

    .venv/bin/python bench/starvation.py [--queries 10] [--timeout 20] [--markdown]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from processes import server
from report import markdown_table, publish

SLOW, OTHER, WRITER = "slow-reader", "other-reader", "writer"
CARTESIAN = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
RESULTS = {"Accept": "application/sparql-results+json"}
PROBES: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "ASK {} (another token)": (OTHER, "GET", "/sparql", {"params": {"query": "ASK {}"}}),
    "ASK {} (the slow token)": (SLOW, "GET", "/sparql", {"params": {"query": "ASK {}"}}),
    "/healthz": (OTHER, "GET", "/healthz", {}),
    "graph-rag question": (OTHER, "POST", "/api/v1/graph-rag", {"json": {"question": "Where was Marie Curie born?"}}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--markdown", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()
    env = {
        "SPARQLRAG_READ_TOKENS": f"{SLOW},{OTHER}",
        "SPARQLRAG_WRITE_TOKENS": WRITER,
        "SPARQLRAG_ANSWER_RATE": "0",
    }
    with (
        tempfile.TemporaryDirectory() as folder,
        server(Path(folder) / "data", "http://bench.example/", env) as (
            client,
            _,
        ),
    ):
        writer = {"Authorization": f"Bearer {WRITER}"}
        triples = "".join(f'<http://e/s{i}> <http://e/p> "{i}" .\n' for i in range(2000))
        client.post(
            "/store?default", content=triples, headers={**writer, "Content-Type": "application/n-triples"}
        ).raise_for_status()
        client.post(
            "/api/v1/documents", json={"id": "d1", "text": "Marie Curie was born in Warsaw."}, headers=writer
        ).raise_for_status()
        figures = _run(str(client.base_url), args.queries, args.timeout)
    rows = [[name, f["answers"], f"{f['p50_ms']:.0f}", f"{f['max_ms']:.0f}"] for name, f in figures["probes"].items()]
    rows.append(["slow queries", figures["slow"], "", f"{figures['slow_max_s'] * 1000:.0f}"])
    table = "\n".join(markdown_table(["probe", "answers", "p50 ms", "max ms"], rows))
    title = f"One token's {args.queries} slow queries, timeout {args.timeout:g} s (bench/starvation.py)"
    publish(title, table, figures, args.markdown)


def _run(url: str, queries: int, timeout: float) -> dict[str, Any]:
    slow_statuses: list[int] = []
    slow_times: list[float] = []

    def slow() -> None:
        started = time.monotonic()
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {SLOW}"}, timeout=timeout + 60) as c:
            status = c.get("/sparql", params={"query": CARTESIAN, "timeout": str(timeout)}, headers=RESULTS).status_code
        slow_statuses.append(status)
        slow_times.append(time.monotonic() - started)

    threads = [threading.Thread(target=slow) for _ in range(queries)]
    for thread in threads:
        thread.start()
    samples: dict[str, list[tuple[int, float]]] = {name: [] for name in PROBES}
    end = time.monotonic() + timeout + 3  # past the deadline: the store process is stopped and restarted

    def sample(name: str) -> None:
        """One probe every 0.2 s, each in its own thread: a probe that stalls holds up no other."""
        token, method, path, request = PROBES[name]
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as client:
            while time.monotonic() < end:
                started = time.monotonic()
                status = client.request(method, path, headers=RESULTS, **request).status_code
                samples[name].append((status, time.monotonic() - started))
                time.sleep(0.2)

    samplers = [threading.Thread(target=sample, args=(name,)) for name in PROBES]
    for thread in samplers:
        thread.start()
    for thread in threads + samplers:
        thread.join()
    return {
        "probes": {
            name: {
                "answers": ", ".join(f"{n}x {s}" for s, n in sorted(Counter(s for s, _ in got).items())),
                "p50_ms": 1000 * statistics.median(t for _, t in got),
                "max_ms": 1000 * max(t for _, t in got),
            }
            for name, got in samples.items()
        },
        "slow": ", ".join(f"{n}x {s}" for s, n in sorted(Counter(slow_statuses).items())),
        "slow_max_s": max(slow_times),
    }


if __name__ == "__main__":
    main()
