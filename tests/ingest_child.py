"""Run as a child process by test_crash.py: a write of several steps that stalls part-way, so
that the test's kill always lands in its middle. By default an ingest of one long document,
stalled during extraction; `--after-indexing`: once its index rows are written, before its
commit; `--forget`: the document ingested, then forgotten, stalled once the store has dropped
it and before its index rows go; `--import CORE`: a knowledge core imported, stalled once its
quads and vectors are written, before its keyword rows; `--drop`: collection `gone` filled, then
deleted, stalled once its graphs and vectors are dropped and before its keyword rows."""

from __future__ import annotations

import asyncio
import sys
import time
from functools import partial
from pathlib import Path

from sparqlrag.config import Settings
from sparqlrag.extraction.knowledge import Knowledge
from sparqlrag.extraction.offline import OfflineExtractor
from sparqlrag.services import Services
from sparqlrag.store import EmbeddedStore
from sparqlrag.store.base import QuadStore
from sparqlrag.store.vocab import Iris

BASE = "http://kb.example/"
DEFAULT = Iris(BASE)  # the default collection's IRIs
STALL_AFTER = 10  # chunks read before the extractor stalls (of 60)


class StallingExtractor(OfflineExtractor):
    """Reads STALL_AFTER chunks, then creates `stalled` and waits to be killed."""

    def __init__(self, stalled: Path) -> None:
        super().__init__()
        self.stalled, self.read = stalled, 0

    async def extract(self, text: str, document_id: str = "") -> Knowledge:
        self.read += 1
        if self.read > STALL_AFTER:
            self.stalled.touch()
            await asyncio.Event().wait()
        return await super().extract(text, document_id)


def build(data_dir: Path, extractor: OfflineExtractor, store: QuadStore | None = None) -> Services:
    settings = Settings(data_dir=data_dir, base_iri=BASE, chunk_size=200, chunk_overlap=0, ingest_concurrency=1)
    return Services.open(settings, store or EmbeddedStore(data_dir / "store"), extractor)


def long_text() -> str:
    return "\n\n".join(f"Person{i} Smith was born in City{i}. City{i} is a town in Country{i % 7}." for i in range(60))


async def stall(stalled: Path, *_: object) -> None:
    stalled.touch()
    await asyncio.Event().wait()


def stall_in_thread(stalled: Path, *_: object) -> None:
    stalled.touch()
    time.sleep(3600)


if __name__ == "__main__":
    data_dir = Path(sys.argv[1])
    stalled = data_dir / "stalled"
    if "--import" in sys.argv:
        services = build(data_dir, OfflineExtractor())
        services.collections.keywords.add = partial(stall_in_thread, stalled)  # type: ignore[method-assign]
        asyncio.run(services.cores.import_(Path(sys.argv[sys.argv.index("--import") + 1])))
    elif "--drop" in sys.argv:
        services = build(data_dir, OfflineExtractor())
        asyncio.run(services.collections.create("gone"))
        asyncio.run(services.pipeline.ingest(Iris(BASE, "gone"), "long", long_text().encode()))
        services.collections.keywords.drop = partial(stall_in_thread, stalled)  # type: ignore[method-assign]
        asyncio.run(services.collections.delete("gone"))
    elif "--forget" in sys.argv:
        services = build(data_dir, OfflineExtractor())
        asyncio.run(services.pipeline.ingest(DEFAULT, "long", long_text().encode()))
        services.indexer.forget = partial(stall, stalled)  # type: ignore[method-assign, assignment]
        asyncio.run(services.pipeline.forget(DEFAULT, "long"))
    else:
        if "--after-indexing" in sys.argv:
            services = build(data_dir, OfflineExtractor())
            services.pipeline._commit = partial(stall, stalled)  # type: ignore[method-assign, assignment]
        else:
            services = build(data_dir, StallingExtractor(stalled))
        asyncio.run(services.pipeline.ingest(DEFAULT, "long", long_text().encode()))
