"""What the SPARQL sandbox costs (store/sandbox.py): with remote access off, an in-process store
scans each query for the words SERVICE and LOAD, and runs one that has them on a thread that
has no sockets (one thread hop).

    .venv/bin/python bench/sandbox_overhead.py [--markdown]

Measured on the same store and data, the sandbox's rounds interleaved with unsandboxed ones
(allow_remote on, the query on the caller's thread): point lookups on 100k triples, and Graph
RAG questions on the demo corpus ingested offline (each question runs a few dozen queries).
The server's store needs no hop (its whole worker process is sandboxed), so this is the CLI's
and the benches' cost.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from report import markdown_table, publish  # noqa: E402

from sparqlrag.config import Settings  # noqa: E402
from sparqlrag.extraction.plans import Source  # noqa: E402
from sparqlrag.services import Models, Services  # noqa: E402
from sparqlrag.store import EmbeddedStore  # noqa: E402

QUESTIONS = [
    "Who founded the W3C?",
    "Where was the World Wide Web invented?",
    "What is SPARQL used for?",
    "Which organisation publishes RDF?",
    "Where is CERN?",
]


def lookups(store: EmbeddedStore, count: int, condition: str = "") -> list[float]:
    times = []
    for index in range(count):
        started = time.perf_counter()
        store.query(f"SELECT ?o WHERE {{ <http://e/s{index % 100_000}> ?p ?o {condition} }}")
        times.append(time.perf_counter() - started)
    return times


def questions(services: Services) -> list[float]:
    times = []
    for question in QUESTIONS:
        started = time.perf_counter()
        asyncio.run(services.graph_rag.answer(services.collections.iris("default"), question))
        times.append(time.perf_counter() - started)
    return times


def interleaved(store: EmbeddedStore, measure, rounds: int) -> tuple[list[float], list[float]]:
    """(sandboxed, direct) timings, alternating rounds so that drift hits both alike."""
    sandboxed: list[float] = []
    direct: list[float] = []
    for _ in range(rounds):
        for allow_remote, into in ((False, sandboxed), (True, direct)):
            store.allow_remote = allow_remote
            into += measure()
    store.allow_remote = False
    return sandboxed, direct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()
    rows, figures = [], {}
    with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as work:
        root = Path(work)
        store = EmbeddedStore(root / "lookups")
        (root / "data.nt").write_text("".join(f'<http://e/s{i}> <http://e/p{i % 7}> "{i}" .\n' for i in range(100_000)))
        store.load(root / "data.nt", __import__("pyoxigraph").RdfFormat.N_TRIPLES, bulk=True)
        sandboxed, direct = interleaved(store, lambda: lookups(store, 1000), rounds=5)
        rows.append(("point lookup, 100k triples (5,000 each)", sandboxed, direct, 1e6, "µs"))
        # a text that says "service" (here in a string) goes through the filtered threads: a thread hop
        sandboxed, direct = interleaved(store, lambda: lookups(store, 1000, 'FILTER(?o != "service")'), rounds=5)
        rows.append(('point lookup whose text says "service" (5,000 each)', sandboxed, direct, 1e6, "µs"))
        store.close()

        (root / "demo").mkdir()
        settings = Settings(data_dir=root / "demo", reranker_model=None)
        store = EmbeddedStore(root / "demo" / "store")
        services = Services.open(settings, store, models=Models.load(settings))
        corpus = ROOT / "sparqlrag" / "demo" / "corpus"
        sources = [Source(p.stem, p.read_bytes(), "text/markdown", p.name, None) for p in sorted(corpus.glob("*.md"))]
        asyncio.run(services.pipeline.ingest_many(services.collections.iris("default"), sources))
        questions(services)  # warm the caches and the model
        sandboxed, direct = interleaved(store, lambda: questions(services), rounds=4)
        services.close()
        store.close()
        rows.append((f"Graph RAG question, demo corpus ({len(sandboxed)} each)", sandboxed, direct, 1e3, "ms"))
    table = []
    for name, sandboxed, direct, scale, unit in rows:
        a, b = statistics.median(sandboxed) * scale, statistics.median(direct) * scale
        table.append([name, f"{a:.1f} {unit}", f"{b:.1f} {unit}", f"{a / b:.2f}x"])
        figures[name] = {"sandboxed": a, "direct": b}
    publish(
        "sandbox_overhead.py",
        "\n".join(markdown_table(["workload", "sandboxed p50", "direct p50", "ratio"], table)),
        figures,
        args.markdown,
    )


if __name__ == "__main__":
    main()
