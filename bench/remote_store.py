"""The system of record in a remote SPARQL store: the same ingest and retrieval on the embedded
store (in the process, as the CLI runs it, and in a worker process, as the server does) and on
`oxigraph serve` (and, with --virtuoso, on Virtuoso, an RDF 1.1 store).

    .venv/bin/python bench/remote_store.py [--dataset DIR] [--virtuoso] [--markdown]

Each store starts empty (its own data folder, a loopback port). The MuSiQue-100 passages are
ingested as one document each, knowledge from its triples.jsonl (as bench/retrieval.py does), and
every question retrieves 8 passages in graph mode (Graph RAG's ranked sources) and in document
mode (Document RAG, hybrid). Printed per store: ingest chunks/s; p50 and p95 ms per question and
recall@5 per mode; the ratios to the embedded store in the process (goal: ingest >= 0.7x,
latency <= 1.5x).

Then, on the remote store, the vector index and keyword index are deleted, as if lost, and
rebuilt from the store alone with `reindex`: recall@5 must come back the same.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from report import markdown_table, publish  # noqa: E402
from shared_data import SHARED, read_jsonl  # noqa: E402

from sparqlrag.config import Settings  # noqa: E402
from sparqlrag.extraction.plans import Source  # noqa: E402
from sparqlrag.extraction.triples_import import PreExtracted, read_triples  # noqa: E402
from sparqlrag.retrieval.document_rag import Passage  # noqa: E402
from sparqlrag.retrieval.options import DocumentRagOptions, GraphRagOptions  # noqa: E402
from sparqlrag.services import Models, Services, remote_store  # noqa: E402
from sparqlrag.store import EmbeddedStore  # noqa: E402
from sparqlrag.store.base import QuadStore  # noqa: E402
from sparqlrag.store.vocab import Iris  # noqa: E402
from sparqlrag.store.worker import WorkerStore  # noqa: E402
from tests.oxigraph_server import start_oxigraph  # noqa: E402
from tests.virtuoso_server import start_virtuoso  # noqa: E402

BASE = "http://bench.example/"
DEFAULT = Iris(BASE)  # the default collection's IRIs
EMBEDDED = "embedded, in process"
K = 8


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@contextmanager
def store_settings(kind: str, work: Path) -> Iterator[dict[str, Any]]:
    """The settings that put the system of record in a store of `kind`, running while inside."""
    if kind.startswith("embedded"):
        yield {}
        return
    server = start_oxigraph(work / "oxigraph") if kind == "oxigraph serve" else start_virtuoso(work / "virtuoso")
    try:
        yield server.endpoints
    finally:
        server.stop()


def open_services(
    kind: str, work: Path, extra: dict[str, Any], models: Models, extractor: PreExtracted
) -> tuple[Services, QuadStore]:
    settings = Settings(data_dir=work / "data", base_iri=BASE, reranker_model=None, **extra)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    store: QuadStore
    if settings.store_url:
        store = remote_store(settings)
    elif kind == EMBEDDED:
        store = EmbeddedStore(settings.store_path)
    else:
        store = WorkerStore(settings.store_path, threads=settings.store_threads)
    return Services.open(settings, store, extractor, models), store


async def measure(services: Services, queries: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """p50 / p95 ms per question and recall@5, in graph and in document mode."""
    prefix = DEFAULT.document("").value

    async def graph(question: str) -> list[Passage]:
        return (await services.graph_rag.retrieve(DEFAULT, question, GraphRagOptions(k=K), mode="graph")).passages

    async def document(question: str) -> list[Passage]:
        return await services.document_rag.retrieve(DEFAULT, question, DocumentRagOptions(k=K))

    modes: dict[str, Callable[[str], Awaitable[list[Passage]]]] = {"graph": graph, "document": document}
    figures: dict[str, dict[str, float]] = {}
    for name, retrieve in modes.items():
        await retrieve(queries[0]["question"])  # warm: the first question loads the search matrices
        times, recall = [], 0.0
        for query in queries:
            started = time.perf_counter()
            passages = await retrieve(query["question"])
            times.append(1000 * (time.perf_counter() - started))
            ranked = [unquote(p.document.removeprefix(prefix)) for p in passages][:5]
            recall += len(set(query["gold_ids"]) & set(ranked)) / len(query["gold_ids"])
        figures[name] = {
            "p50_ms": percentile(times, 0.5),
            "p95_ms": percentile(times, 0.95),
            "recall@5": 100 * recall / len(queries),
        }
    return figures


async def run(kind: str, dataset: Path, models: Models, rebuild: bool) -> dict[str, Any]:
    corpus, queries = read_jsonl(dataset / "corpus.jsonl"), read_jsonl(dataset / "queries.jsonl")
    sources = [Source(p["id"], f"{p['title']}\n\n{p['text']}".encode(), title=p["title"]) for p in corpus]
    with tempfile.TemporaryDirectory(prefix="remote-bench-") as folder, store_settings(kind, Path(folder)) as extra:
        work = Path(folder)
        extractor = PreExtracted(read_triples(dataset / "triples.jsonl"))
        services, store = open_services(kind, work, extra, models, extractor)
        started = time.monotonic()
        results = await services.pipeline.ingest_many(DEFAULT, sources)
        seconds = time.monotonic() - started
        failed = [r for r in results if isinstance(r, Exception)]
        if failed:
            raise SystemExit(f"{kind}: {len(failed)} passages failed to ingest, first: {failed[0]!r}")
        chunks = sum(r.chunks_added for r in results if not isinstance(r, Exception))
        figures: dict[str, Any] = {"chunks": chunks, "ingest_s": seconds, "chunks_per_s": chunks / seconds}
        figures |= await measure(services, queries)
        services.close()
        store.close()
        if rebuild:  # the derived indexes lost: only the store is left
            for lost in (work / "data").glob("vectors.sqlite*"):
                lost.unlink()
            (work / "data" / "keywords.sqlite").unlink()
            services, store = open_services(kind, work, extra, models, extractor)
            started = time.monotonic()
            figures["reindex_vectors"] = await services.pipeline.indexer.reindex(DEFAULT)
            figures["reindex_s"] = time.monotonic() - started
            figures["after reindex"] = await measure(services, queries)
            services.close()
            store.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=SHARED / "musique100")
    parser.add_argument("--virtuoso", action="store_true", help="also on Virtuoso (Debian's virtuoso-opensource)")
    parser.add_argument("--markdown", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()
    models = Models.load(Settings(data_dir=Path(tempfile.mkdtemp(prefix="remote-bench-models-")), reranker_model=None))
    kinds = [EMBEDDED, "embedded, worker process", "oxigraph serve"] + (["virtuoso"] if args.virtuoso else [])
    report: dict[str, dict[str, Any]] = {}
    for kind in kinds:
        report[kind] = asyncio.run(run(kind, args.dataset, models, rebuild=not kind.startswith("embedded")))
        print(kind, json.dumps(report[kind], default=lambda v: round(v, 2)), flush=True)
    base = report[EMBEDDED]
    rows = []
    for kind, m in report.items():
        ratio = "" if kind == EMBEDDED else f" ({m['chunks_per_s'] / base['chunks_per_s']:.2f}x)"
        row = [kind, f"{m['chunks_per_s']:.1f}{ratio}"]
        for mode in ("graph", "document"):
            slower = "" if kind == EMBEDDED else f" ({m[mode]['p50_ms'] / base[mode]['p50_ms']:.2f}x)"
            row += [f"{m[mode]['p50_ms']:.0f}{slower}", f"{m[mode]['p95_ms']:.0f}", f"{m[mode]['recall@5']:.1f}"]
        after = m.get("after reindex")
        row.append("" if after is None else f"{after['graph']['recall@5']:.1f} / {after['document']['recall@5']:.1f}")
        rows.append(row)
    header = ["store", "ingest chunks/s", "graph p50 ms", "p95", "R@5", "document p50 ms", "p95", "R@5"]
    lines = markdown_table([*header, "R@5 after reindex (graph / document)"], rows)
    publish("remote_store.py", "\n".join(lines), report, args.markdown)


if __name__ == "__main__":
    main()
