"""What a scope costs: sr:documentRag inside a SPARQL query, unscoped and scoped, on 2Wiki-6k.

    .venv/bin/python bench/scoped_search.py [--data-dir DIR] [--markdown]

The data directory holds 2wiki-6k/corpus.jsonl ingested by `sparqlrag ingest` (made if
missing, with the offline extractor). Half its documents, picked at random (seed 0), get
`ex:half true` in a graph of their own. For each of the 101 questions three queries run, in an
order that rotates from question to question, each through the operations layer as /sparql
runs it (the block read, its scope evaluated, the search, the rows written in, the query run):
- unscoped: `SERVICE sr:documentRag { [] sr:question "..." ; sr:k 5 ; sr:chunk ?c ; ... }`;
- a few documents: the same with `VALUES ?doc { ... }` of the question's gold documents and 3
  random others;
- half the corpus: the same with `?doc ex:half true`.
The search alone (DocumentRag.retrieve with the scope made beforehand) is timed too, to tell
the scope's SPARQL from the ranking. The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from processes import SPARQLRAG  # noqa: E402
from report import markdown_table, publish  # noqa: E402
from shared_data import SHARED, read_jsonl  # noqa: E402

from sparqlrag.config import Settings  # noqa: E402
from sparqlrag.operations.access import EVERYTHING  # noqa: E402
from sparqlrag.operations.collection import open_collection  # noqa: E402
from sparqlrag.operations.deadline import Deadline  # noqa: E402
from sparqlrag.operations.scopes import Dataset, scope_of  # noqa: E402
from sparqlrag.operations.sparql_services import calls_in, with_services  # noqa: E402
from sparqlrag.retrieval.options import DocumentRagOptions  # noqa: E402
from sparqlrag.services import Services  # noqa: E402
from sparqlrag.store.embedded import EmbeddedStore  # noqa: E402

BASE = "http://scale.example/"
META = "http://scale.example/meta"
PREFIXES = "PREFIX sr: <https://w3id.org/sparqlrag/ns#> PREFIX ex: <http://scale.example/ns#>\n"


def query(question: str, scope: str) -> str:
    quoted = json.dumps(question)  # (a JSON string is a SPARQL string literal)
    return (
        PREFIXES
        + f"""SELECT ?chunk ?rank WHERE {{ SERVICE sr:documentRag {{
          [] sr:question {quoted} ; sr:k 5 ; sr:chunk ?chunk ; sr:rank ?rank ; sr:document ?doc .
          {scope} }} }}"""
    )


async def timed_query(services: Services, text: str) -> tuple[float, int]:
    """Seconds for the whole query, and its rows."""
    started = time.perf_counter()
    dataset = Dataset(union_default_graph=True)
    deadline = Deadline(60)
    rewritten = await with_services(services, text, calls_in(text), EVERYTHING, dataset=dataset, deadline=deadline)
    result = services.store.query(rewritten, accept="application/sparql-results+json", union_default_graph=True)
    rows = len(json.loads(result.body)["results"]["bindings"])
    return time.perf_counter() - started, rows


async def measure(services: Services, queries: list[dict[str, Any]], ids: list[str]) -> dict[str, dict[str, float]]:
    pick = random.Random(0)
    half = pick.sample(ids, len(ids) // 2)
    marks = " ".join(f"<{BASE}doc/default/{d}> ex:half true ." for d in half)
    services.store.update(f"{PREFIXES} INSERT DATA {{ GRAPH <{META}> {{ {marks} }} }}")
    collection = await open_collection(services, "default")
    rag, options = services.document_rag, DocumentRagOptions(k=5)
    times: dict[str, list[float]] = {}
    rows: dict[str, list[int]] = {}
    await timed_query(services, query("warm up", ""))
    for number, asked in enumerate(queries):
        few = [*asked["gold_ids"], *pick.sample(ids, 3)]
        scopes = {
            "unscoped": "",
            "few documents": "VALUES ?doc { " + " ".join(f"<{BASE}doc/default/{d}>" for d in few) + " }",
            "half the corpus": "?doc ex:half true",
        }
        names = list(scopes)
        for name in names[number % 3 :] + names[: number % 3]:
            seconds, found = await timed_query(services, query(asked["question"], scopes[name]))
            times.setdefault(f"query, {name}", []).append(seconds)
            rows.setdefault(name, []).append(found)
        made = {
            "few documents": await scope_of(collection, documents=few),
            "half the corpus": await scope_of(collection, pattern="?document <http://scale.example/ns#half> true"),
        }
        for name, scope in [("unscoped", None), *made.items()]:
            started = time.perf_counter()
            await rag.retrieve(collection.iris, asked["question"], options, scope=scope)
            times.setdefault(f"search alone, {name}", []).append(time.perf_counter() - started)
    figures = {
        name: {
            "p50_ms": 1000 * statistics.median(values),
            "p90_ms": 1000 * statistics.quantiles(values, n=10)[-1],
            "mean_ms": 1000 * statistics.fmean(values),
        }
        for name, values in times.items()
    }
    for name, counts in rows.items():
        figures[f"query, {name}"]["rows_mean"] = statistics.fmean(counts)
    for kind in ("query", "search alone"):
        base = figures[f"{kind}, unscoped"]["p50_ms"]
        for name in ("few documents", "half the corpus"):
            figures[f"{kind}, {name}"]["p50_ratio"] = figures[f"{kind}, {name}"]["p50_ms"] / base
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=SHARED / "2wiki-6k")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/scoped-search-data"))
    parser.add_argument("--markdown", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()
    settings = Settings(data_dir=args.data_dir, base_iri=BASE)
    if not settings.store_path.exists():
        command = [SPARQLRAG, "ingest", "--data-dir", str(args.data_dir), "--base-iri", BASE]
        subprocess.run([*command, str(args.dataset / "corpus.jsonl")], check=True, stdout=subprocess.DEVNULL)
    ids = [p["id"] for p in read_jsonl(args.dataset / "corpus.jsonl")]
    queries = read_jsonl(args.dataset / "queries.jsonl")
    store = EmbeddedStore(settings.store_path)
    services = Services.open(settings, store)
    try:
        figures = asyncio.run(measure(services, queries, ids))
    finally:
        services.close()
        store.close()
    table = "\n".join(
        markdown_table(
            ["path, scope", "p50 ms", "p90 ms", "mean ms", "p50 / unscoped"],
            [
                [name, *(f"{f[key]:.1f}" for key in ("p50_ms", "p90_ms", "mean_ms")), f"{f.get('p50_ratio', 1.0):.2f}"]
                for name, f in figures.items()
            ],
        )
    )
    title = f"Scoped search on 2wiki-6k ({len(queries)} questions, {len(ids)} passages)"
    publish(title, table, figures, args.markdown)


if __name__ == "__main__":
    main()
