"""Passage retrieval quality of Document RAG (keyword, vector, hybrid) on multi-hop QA sets.

    .venv/bin/python bench/retrieval.py [--dataset DIR ...] [--markdown]

Each DIR holds `corpus.jsonl` {id,title,text} and `queries.jsonl` {id,question,gold_ids}
(the shared format, see ../shared/data/README.md). Every passage is ingested as one document
(title line + text) with the offline extractor, then each question retrieves 8 passages per
mode (hybrid also at other fusion weights, to show how much they matter). Metrics: recall@k = share of a question's gold passages in the top k, averaged;
all-gold@8 = share of questions with every gold passage in the top 8. The last line printed
is one JSON object with every metric per dataset and mode.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from report import publish  # noqa: E402
from sparqlrag.config import Settings  # noqa: E402
from sparqlrag.extraction.offline import OfflineExtractor  # noqa: E402
from sparqlrag.extraction.pipeline import Source  # noqa: E402
from sparqlrag.retrieval.document_rag import MODES  # noqa: E402
from sparqlrag.services import Services  # noqa: E402
from sparqlrag.store import EmbeddedStore  # noqa: E402
from sparqlrag.store.vocab import Iris  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
SWEEP = [(0.5, 0.5), (0.75, 0.25)]  # hybrid fusion weights shown beside the configured ones
BASE = "http://bench.example/"
# Published or previously measured figures for these exact files (../shared/data/README.md), in %.
REFERENCE = {
    "musique100": {"recall@5": {"BM25 (measured here)": 50.9, "all-MiniLM-L6-v2 dense (measured here)": 62.2}},
    "2wiki101": {
        "recall@5": {"BM25 (measured here)": 64.9, "all-MiniLM-L6-v2 dense (measured here)": 65.1},
        "all-gold@8": {"vector DB (fast-graphrag)": 41.6, "LightRAG": 44.6, "nano-graphrag": 73.3, "fast-graphrag": 93.1},
    },
}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


async def evaluate(dataset: Path, work: Path) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    corpus, queries = read_jsonl(dataset / "corpus.jsonl"), read_jsonl(dataset / "queries.jsonl")
    store = EmbeddedStore(work / "store")
    services = Services.open(Settings(data_dir=work, base_iri=BASE, reranker_model=None), store, OfflineExtractor())
    pipeline = services.pipeline
    started = time.monotonic()
    sources = [Source(p["id"], f"{p['title']}\n\n{p['text']}".encode(), title=p["title"]) for p in corpus]
    failures = [r for r in await pipeline.ingest_many("default", sources) if isinstance(r, Exception)]
    if failures:
        raise SystemExit(f"{len(failures)} passages failed to ingest, first: {failures[0]}")
    timings = {"ingest_s": time.monotonic() - started, "passages": len(corpus)}
    rag = services.document_rag
    prefix = Iris(BASE).document("").value
    metrics: dict[str, dict[str, float]] = {}
    # the modes as configured, then hybrid at other fusion weights (vector, keyword), for comparison
    runs = [(mode, mode, None) for mode in MODES] + [(f"hybrid {v}/{k}", "hybrid", (v, k)) for v, k in SWEEP]
    for name, mode, weights in runs:
        started = time.monotonic()
        r2 = r5 = all8 = 0.0
        for query in queries:
            passages = await rag.retrieve("default", query["question"], mode=mode, k=8, weights=weights)
            ranked = [unquote(p.document.removeprefix(prefix)) for p in passages]
            gold = set(query["gold_ids"])
            r2 += len(gold & set(ranked[:2])) / len(gold)
            r5 += len(gold & set(ranked[:5])) / len(gold)
            all8 += gold <= set(ranked[:8])
        n = len(queries)
        metrics[name] = {"recall@2": 100 * r2 / n, "recall@5": 100 * r5 / n, "all-gold@8": 100 * all8 / n,
                         "ms_per_query": 1000 * (time.monotonic() - started) / n}  # fmt: skip
    services.close()
    store.close()
    return metrics, timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, nargs="+", default=[SHARED / "2wiki101", SHARED / "musique100"])
    parser.add_argument("--markdown", action="store_true", help="append the tables to bench/RESULTS.md")
    args = parser.parse_args()
    report: dict[str, dict] = {}
    lines: list[str] = []
    for dataset in args.dataset:
        if not (dataset / "corpus.jsonl").is_file() or not (dataset / "queries.jsonl").is_file():
            raise SystemExit(f"{dataset} needs corpus.jsonl and queries.jsonl")
        with tempfile.TemporaryDirectory(prefix="retrieval-bench-") as work:
            metrics, timings = asyncio.run(evaluate(dataset, Path(work)))
        report[dataset.name] = {"document": metrics, "ingest": timings}
        lines += [f"\n### {dataset.name}: document retrieval ({timings['passages']} passages, "
                  f"ingested in {timings['ingest_s']:.0f} s)\n",
                  "| mode | recall@2 | recall@5 | all-gold@8 | ms/query |", "|---|---|---|---|---|"]  # fmt: skip
        for mode, m in metrics.items():
            lines.append(f"| {mode} | {m['recall@2']:.1f} | {m['recall@5']:.1f} | {m['all-gold@8']:.1f} | {m['ms_per_query']:.0f} |")
        for metric, refs in REFERENCE.get(dataset.name, {}).items():
            for name, value in refs.items():
                lines.append(f"| {name} (reference) | | {value if metric == 'recall@5' else ''} | "
                             f"{value if metric == 'all-gold@8' else ''} | |")  # fmt: skip
    publish("retrieval.py", "\n".join(lines), report, args.markdown)


if __name__ == "__main__":
    main()
