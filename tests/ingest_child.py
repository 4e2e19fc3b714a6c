"""Run as a child process by test_crash.py: ingest one long document slowly, to be killed mid-way."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from sparqlrag.config import Settings
from sparqlrag.extraction.knowledge import Knowledge
from sparqlrag.extraction.offline import OfflineExtractor
from sparqlrag.services import Services
from sparqlrag.store import EmbeddedStore

BASE = "http://kb.example/"


class SlowExtractor(OfflineExtractor):
    async def extract(self, text: str, document_id: str = "") -> Knowledge:
        await asyncio.sleep(0.1)
        return await super().extract(text, document_id)


def build(data_dir: Path, extractor: OfflineExtractor) -> Services:
    settings = Settings(data_dir=data_dir, base_iri=BASE, chunk_size=200, chunk_overlap=0, ingest_concurrency=1)
    return Services.open(settings, EmbeddedStore(data_dir / "store"), extractor)


def long_text() -> str:
    return "\n\n".join(f"Person{i} Smith was born in City{i}. City{i} is a town in Country{i % 7}." for i in range(60))


if __name__ == "__main__":
    services = build(Path(sys.argv[1]), SlowExtractor())
    asyncio.run(services.pipeline.ingest("default", "long", long_text().encode()))
