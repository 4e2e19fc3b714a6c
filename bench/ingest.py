"""Ingest throughput: chunks/s and facts/s, end to end (decode, chunk, extract, embed, index, store).

    .venv/bin/python bench/ingest.py [--markdown]

Runs: the offline extractor on ../shared/data/corpus (country profiles and speeches, 2,000-char
chunks) and on the MuSiQue passages, and the pre-extracted triples import on MuSiQue. Each run
starts from an empty data directory. "extractor only" times the offline extractor alone on the
same chunks, to tell extraction from embedding and storage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from report import markdown_table, publish  # noqa: E402
from shared_data import SHARED  # noqa: E402

from sparqlrag.config import Settings  # noqa: E402
from sparqlrag.extraction.chunker import split  # noqa: E402
from sparqlrag.extraction.knowledge import Extractor  # noqa: E402
from sparqlrag.extraction.offline import OfflineExtractor  # noqa: E402
from sparqlrag.extraction.plans import Source  # noqa: E402
from sparqlrag.extraction.triples_import import PreExtracted, read_triples  # noqa: E402
from sparqlrag.services import Services  # noqa: E402
from sparqlrag.store import EmbeddedStore  # noqa: E402


def corpus_files() -> list[Source]:
    files = sorted((SHARED / "corpus").rglob("*.txt"))
    return [Source(str(f.relative_to(SHARED / "corpus")), f.read_bytes(), "text/plain", f.name) for f in files]


def musique() -> list[Source]:
    lines = (SHARED / "musique100" / "corpus.jsonl").read_text().splitlines()
    items = [json.loads(line) for line in lines if line.strip()]
    return [Source(p["id"], f"{p['title']}\n\n{p['text']}".encode(), "text/plain", None, p["title"]) for p in items]


async def run(sources: list[Source], extractor: Extractor, work: Path) -> dict[str, float]:
    store = EmbeddedStore(work / "store")
    services = Services.open(Settings(data_dir=work, base_iri="http://bench.example/"), store, extractor)
    pipeline = services.pipeline
    started = time.monotonic()
    results = await pipeline.ingest_many(services.collections.iris("default"), sources)
    seconds = time.monotonic() - started
    failed = [r for r in results if isinstance(r, Exception)]
    if failed:
        raise SystemExit(f"{len(failed)} documents failed, first: {failed[0]}")
    chunks = sum(r.chunks_added for r in results if not isinstance(r, Exception))
    facts = sum(r.facts for r in results if not isinstance(r, Exception))
    services.close()
    store.close()
    return {
        "documents": len(sources),
        "chunks": chunks,
        "facts": facts,
        "seconds": seconds,
        "chunks_per_s": chunks / seconds,
        "facts_per_s": facts / seconds,
    }


def extractor_only(sources: list[Source]) -> float:
    chunks = [piece.text for s in sources for piece in split(s.data.decode("utf-8"))]
    extractor = OfflineExtractor()
    started = time.monotonic()
    for chunk in chunks:
        extractor.extract_sync(chunk)
    return len(chunks) / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()
    runs: dict[str, tuple[Callable[[], list[Source]], Callable[[], Extractor]]] = {
        "offline, corpus/": (corpus_files, OfflineExtractor),
        "offline, MuSiQue passages": (musique, OfflineExtractor),
        "triples import, MuSiQue": (
            musique,
            lambda: PreExtracted(read_triples(SHARED / "musique100" / "triples.jsonl")),
        ),
    }
    report: dict[str, dict[str, float]] = {}
    for name, (sources_of, make_extractor) in runs.items():
        sources = sources_of()
        with tempfile.TemporaryDirectory(prefix="ingest-bench-") as work:
            report[name] = asyncio.run(run(sources, make_extractor(), Path(work)))
        if name.startswith("offline"):
            report[name]["extractor_only_chunks_per_s"] = extractor_only(sources)
        print(name, json.dumps({k: round(v, 1) for k, v in report[name].items()}), flush=True)
    rows = [
        [
            name,
            f"{m['documents']:.0f}",
            f"{m['chunks']:.0f}",
            f"{m['facts']:.0f}",
            f"{m['seconds']:.0f}",
            f"{m['chunks_per_s']:.1f}",
            f"{m['facts_per_s']:.0f}",
            "" if (only := m.get("extractor_only_chunks_per_s")) is None else f"{only:.0f}",
        ]
        for name, m in report.items()
    ]
    lines = markdown_table(
        ["run", "documents", "chunks", "facts", "seconds", "chunks/s", "facts/s", "extractor only, chunks/s"], rows
    )
    publish("ingest.py", "\n".join(lines), report, args.markdown)


if __name__ == "__main__":
    main()
