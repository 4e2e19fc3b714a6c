"""Memory and speed of ingesting a big corpus, through the CLI and through the HTTP server.

    .venv/bin/python bench/scale.py [--dataset DIR] [--copies 1 3] [--paths cli http] [--markdown]

Each corpus is the dataset's `corpus.jsonl` (default: 2wiki-6k, 6,119 passages) repeated
`copies` times under new ids (`id~2`, `id~3`, ...). Each path ingests it into a fresh data
directory with the offline extractor:
- cli: `sparqlrag ingest corpus.jsonl` (the store in process);
- http: `sparqlrag serve`, documents POSTed 128 to a multipart request (the store in its worker
  process), then 20 Graph RAG and Document RAG questions over HTTP (the indexes loaded).
The RSS of the whole process tree (server and store worker) is sampled every 0.2 s: peak,
after ingest, and (http) after the questions. Then the retrieval figures of every mode are
measured on the data directory as bench/retrieval.py measures them (with `copies` > 1, a mode
retrieves that many times more passages and a copy counts as its passage, once).

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from processes import SPARQLRAG, RssSampler, server  # noqa: E402
from report import markdown_table, publish  # noqa: E402
from retrieval import recall_by_mode  # noqa: E402
from shared_data import SHARED, read_jsonl  # noqa: E402

from sparqlrag.config import Settings  # noqa: E402
from sparqlrag.retrieval.options import GraphRagOptions  # noqa: E402
from sparqlrag.services import Services  # noqa: E402
from sparqlrag.store.embedded import EmbeddedStore  # noqa: E402
from sparqlrag.store.vocab import Iris  # noqa: E402

BASE = "http://scale.example/"
UPLOAD = 128  # documents a request
GOAL_MB = 1536


def corpus_file(dataset: Path, copies: int, folder: Path) -> tuple[Path, int]:
    """The dataset's corpus `copies` times over, as a JSONL file; and its passage count."""
    passages = read_jsonl(dataset / "corpus.jsonl")
    path = folder / f"corpus-x{copies}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for copy in range(1, copies + 1):
            for passage in passages:
                named = passage | {"id": passage["id"] if copy == 1 else f"{passage['id']}~{copy}"}
                out.write(json.dumps(named, ensure_ascii=False) + "\n")
    return path, copies * len(passages)


def ingest_cli(corpus: Path, data: Path) -> dict[str, float]:
    started = time.monotonic()
    command = [SPARQLRAG, "ingest", "--data-dir", str(data), "--base-iri", BASE, str(corpus)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sampler = RssSampler(process.pid)
    _, errors = process.communicate()
    sampler.stop()
    if process.returncode:
        raise SystemExit(f"sparqlrag ingest failed: {errors[-2000:]}")
    return {"ingest_s": time.monotonic() - started, "peak_mb": sampler.peak}


def ingest_http(corpus: Path, data: Path, questions: list[str]) -> dict[str, float]:
    passages = read_jsonl(corpus)
    with server(data, BASE) as (client, process):
        sampler = RssSampler(process.pid)
        started = time.monotonic()
        for start in range(0, len(passages), UPLOAD):
            files = [
                ("file", (p["id"], f"{p['title']}\n\n{p['text']}".encode(), "text/plain"))
                for p in passages[start : start + UPLOAD]
            ]
            response = client.post("/api/v1/documents", files=files)
            if response.status_code != 201:
                raise SystemExit(f"upload failed: {response.status_code} {response.text[:300]}")
        seconds = time.monotonic() - started
        after_ingest = sampler.now()
        for question in questions:
            for route in ("/api/v1/graph-rag", "/api/v1/document-rag"):
                response = client.post(route, json={"question": question})
                if response.status_code != 200:
                    raise SystemExit(f"{route} failed: {response.status_code} {response.text[:300]}")
        serving = sampler.now()
        sampler.stop()
    return {"ingest_s": seconds, "peak_mb": sampler.peak, "after_ingest_mb": after_ingest, "serving_mb": serving}


async def retrieval(data: Path, queries: list[dict[str, Any]], copies: int) -> dict[str, dict[str, float]]:
    settings = Settings(data_dir=data, base_iri=BASE, reranker_model=None)
    store = EmbeddedStore(settings.store_path)
    services = Services.open(settings, store)
    try:
        return await recall_by_mode(services, queries, GraphRagOptions(), Iris(BASE).document("").value, copies)
    finally:
        services.close()
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=SHARED / "2wiki-6k")
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--paths", nargs="+", choices=["cli", "http"], default=["cli", "http"])
    parser.add_argument("--markdown", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()
    queries = read_jsonl(args.dataset / "queries.jsonl")
    report: dict[str, Any] = {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as work:
        for copies in args.copies:
            corpus, passages = corpus_file(args.dataset, copies, Path(work))
            for path in args.paths:
                data = Path(work) / f"{path}-x{copies}"
                print(f"{path}, {passages} passages ...", file=sys.stderr, flush=True)
                if path == "cli":
                    figures: dict[str, Any] = ingest_cli(corpus, data)
                else:
                    figures = ingest_http(corpus, data, [q["question"] for q in queries[:20]])
                figures |= {"passages": passages, "passages_per_s": passages / figures["ingest_s"]}
                figures["retrieval"] = asyncio.run(retrieval(data, queries, copies))
                report[f"{path} x{copies}"] = figures
                print(json.dumps(figures), file=sys.stderr, flush=True)
                recall = figures["retrieval"]
                rows.append(
                    [
                        path,
                        f"{passages:,}",
                        f"{figures['peak_mb']:.0f}",
                        f"{figures.get('after_ingest_mb', 0):.0f}" if path == "http" else "",
                        f"{figures.get('serving_mb', 0):.0f}" if path == "http" else "",
                        f"{figures['passages_per_s']:.1f}",
                        " / ".join(f"{recall[m]['recall@5']:.1f}" for m in recall),
                    ]
                )
                for stale in data.parent.glob(f"{data.name}*"):
                    subprocess.run(["rm", "-rf", str(stale)], check=True)
    modes = " / ".join(next(iter(report.values()))["retrieval"])
    header = ["path", "passages", "peak RSS MB", "after ingest MB", "serving MB", "passages/s", f"R@5: {modes}"]
    table = "\n".join(
        [
            f"\n### {args.dataset.name}: memory and speed of ingest (goal: peak <= {GOAL_MB} MB, cores: "
            f"{os.cpu_count()})\n",
            *markdown_table(header, rows),
        ]
    )
    print(table, file=sys.stderr)
    publish("scale.py", table, report, args.markdown)


if __name__ == "__main__":
    main()
