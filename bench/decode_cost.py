"""What the decode sandbox costs a normal ingest (extraction/decode_pool.py): every document is
decoded in a bounded child process instead of on one of the server's threads.

    .venv/bin/python bench/decode_cost.py [--passages N] [--rounds R] [--markdown]

Ingests, offline, into a fresh data directory each run: the 2Wiki-6k passages (one document
each, as bench/retrieval.py ingests them) and a real multi-page PDF (fpdf2, the tests' annual
report padded to 73 pages), once with the sandbox (the default) and once decoding in a
thread as before, the two alternated `rounds` times. Prints the seconds of each run and the
ratio of the medians; the decode alone is timed too (every passage decoded, no ingest).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from report import markdown_table, publish  # noqa: E402
from shared_data import SHARED  # noqa: E402

from sparqlrag.config import Settings  # noqa: E402
from sparqlrag.extraction.decode_limits import DecodeLimits  # noqa: E402
from sparqlrag.extraction.decode_pool import DecodePool  # noqa: E402
from sparqlrag.extraction.decoders import Decoded, decode  # noqa: E402
from sparqlrag.extraction.plans import Source  # noqa: E402
from sparqlrag.services import Services  # noqa: E402
from sparqlrag.store import EmbeddedStore  # noqa: E402
from tests.documents_made import report_pdf  # noqa: E402


class InThread:
    """Decoding as it was before the sandbox: in a thread of the calling process."""

    async def decode(self, data: bytes, media_type: str | None, filename: str | None) -> Decoded:
        return await asyncio.to_thread(decode, data, media_type, filename)

    def close(self) -> None:
        pass


def passages(count: int) -> list[Source]:
    lines = (SHARED / "2wiki-6k" / "corpus.jsonl").read_text().splitlines()[:count]
    corpus = [json.loads(line) for line in lines]
    return [Source(p["id"], f"{p['title']}\n\n{p['text']}".encode(), title=p["title"]) for p in corpus]


async def _ingest(services: Services, sources: list[Source], batch: int = 64) -> None:
    for start in range(0, len(sources), batch):
        await services.pipeline.ingest_many(services.collections.iris("default"), sources[start : start + batch])


def ingest_seconds(sources: list[Source], sandboxed: bool) -> float:
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(data_dir=Path(folder))
        store = EmbeddedStore(Path(folder) / "store")
        services = Services.open(settings, store)
        if not sandboxed:
            services.pipeline.decoder.close()
            services.pipeline.decoder = InThread()  # type: ignore[assignment]
        try:
            started = time.perf_counter()
            asyncio.run(_ingest(services, sources))
            return time.perf_counter() - started
        finally:
            services.close()
            store.close()


def decode_seconds(sources: list[Source], sandboxed: bool) -> float:
    decoder = DecodePool(DecodeLimits(), 2) if sandboxed else InThread()

    async def run() -> None:
        await decoder.decode(b"warm up", "text/plain", None)  # (the process starts once, not per document)
        started = time.perf_counter()
        for source in sources:
            await decoder.decode(source.data, source.media_type, source.filename)
        timings.append(time.perf_counter() - started)

    timings: list[float] = []
    try:
        asyncio.run(run())
    finally:
        decoder.close()
    return timings[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, default=6119)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    corpus = passages(args.passages)
    pdf = [Source("report.pdf", report_pdf(filler=1500), "application/pdf", "report.pdf")]
    print(f"{len(corpus)} passages; the PDF: {len(pdf[0].data)} bytes", file=sys.stderr)
    runs: dict[tuple[str, str], list[float]] = {}
    for round_ in range(args.rounds):
        for sandboxed in (round_ % 2 == 0, round_ % 2 != 0):  # alternated: which goes first changes
            mode = "sandbox" if sandboxed else "in-thread"
            for name, sources, timed in (
                ("2wiki-6k decode only", corpus, decode_seconds),
                ("2wiki-6k ingest", corpus, ingest_seconds),
                ("multi-page PDF ingest", pdf, ingest_seconds),
            ):
                seconds = timed(sources, sandboxed)
                runs.setdefault((name, mode), []).append(seconds)
                print(f"round {round_ + 1} {name} {mode}: {seconds:.2f} s", file=sys.stderr)
    rows = []
    for name in ("2wiki-6k decode only", "2wiki-6k ingest", "multi-page PDF ingest"):
        before, after = runs[(name, "in-thread")], runs[(name, "sandbox")]
        rows.append(
            [
                name,
                " / ".join(f"{s:.2f}" for s in before),
                " / ".join(f"{s:.2f}" for s in after),
                f"{statistics.median(after) / statistics.median(before):.3f}",
            ]
        )
    table = "\n".join(markdown_table(["run", "in a thread (s)", "sandboxed (s)", "ratio of medians"], rows))
    publish(
        "Decode sandbox cost (bench/decode_cost.py)",
        table,
        {"runs": {f"{k[0]} | {k[1]}": v for k, v in runs.items()}},
        args.markdown,
    )


if __name__ == "__main__":
    main()
