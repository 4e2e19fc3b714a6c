"""Run as a child process by test_crash.py: ingest one long document slowly, to be killed mid-way."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from sparqlrag.extraction.knowledge import Knowledge
from sparqlrag.extraction.offline import OfflineExtractor
from sparqlrag.extraction.pipeline import Pipeline
from sparqlrag.models.embedder import Embedder
from sparqlrag.store import EmbeddedStore
from sparqlrag.store.keyword_index import KeywordIndex
from sparqlrag.store.vector_index import VectorIndex

BASE = "http://kb.example/"


class SlowExtractor(OfflineExtractor):
    async def extract(self, text: str, document_id: str = "") -> Knowledge:
        await asyncio.sleep(0.1)
        return await super().extract(text, document_id)


def build(data_dir: Path, extractor: OfflineExtractor) -> Pipeline:
    embedder = Embedder(models_dir=data_dir / "models")
    return Pipeline(
        store=EmbeddedStore(data_dir / "store"), vectors=VectorIndex(embedder.dim, path=data_dir / "qdrant"),
        keywords=KeywordIndex(data_dir / "keywords.sqlite"), embedder=embedder, extractor=extractor,
        base_iri=BASE, work_dir=data_dir, chunk_size=200, chunk_overlap=0, concurrency=1,
    )  # fmt: skip


def long_text() -> str:
    return "\n\n".join(f"Person{i} Smith was born in City{i}. City{i} is a town in Country{i % 7}." for i in range(60))


if __name__ == "__main__":
    pipeline = build(Path(sys.argv[1]), SlowExtractor())
    asyncio.run(pipeline.ingest("default", "long", long_text().encode()))
