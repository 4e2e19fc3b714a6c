"""kill -9 during ingest, then restart: the document is never half visible as ready, and recovery
finishes it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sparqlrag.extraction.chunker import split
from sparqlrag.extraction.offline import OfflineExtractor
from sparqlrag.library import librarian
from sparqlrag.library.files import Upload
from sparqlrag.store.vocab import Iris
from tests.ingest_child import build, long_text

ROOT = Path(__file__).resolve().parent.parent


def test_kill_during_ingest_then_recover(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-m", "tests.ingest_child", str(tmp_path)], cwd=ROOT)
    pending = tmp_path / "pending"
    deadline = time.monotonic() + 60
    while not (pending.is_dir() and any(pending.glob("*.json"))):
        assert child.poll() is None, "the child ended before it started ingesting"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(1.5)  # well into the 60 slow chunks (6 s in all)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()

    services = build(tmp_path, OfflineExtractor())
    pipeline = services.pipeline
    iris = Iris(pipeline.base_iri)
    chunks = len(split(long_text(), pipeline.chunk_size, pipeline.chunk_overlap))
    try:
        (info,) = librarian.documents(pipeline.store, iris)
        assert info.status == "processing" and info.chunks == 0  # nothing half-written, nothing "ready"
        assert pipeline.vectors.count("default", "chunks") == 0
        (result,) = asyncio.run(pipeline.recover())
        assert not isinstance(result, Exception) and (result.status, result.chunks_added) == ("ready", chunks)
        (info,) = librarian.documents(pipeline.store, iris)
        assert (info.status, info.chunks) == ("ready", chunks)
        assert not any(pending.glob("*"))
        assert asyncio.run(pipeline.ingest("default", "long", long_text().encode())).status == "unchanged"
    finally:
        services.close()
        services.store.close()


def test_a_marker_that_cannot_be_replayed_is_dropped(tmp_path: Path) -> None:
    services = build(tmp_path, OfflineExtractor())
    pipeline = services.pipeline
    try:
        pipeline.library.save(Upload("default", "empty", None, None, None), b"")  # an empty document cannot be ingested
        pipeline.library.pending_dir.mkdir(parents=True, exist_ok=True)
        (pipeline.library.pending_dir / "lost.json").write_text(
            '{"collection": "default", "document_id": "lost", "media_type": null, "filename": null, "title": null}'
        )
        results = asyncio.run(pipeline.recover())
        assert sorted(str(r) for r in results) == [
            "the document is empty",
            "the library holds no copy of document 'lost' in collection 'default'",
        ]
        assert not any(pipeline.library.pending_dir.glob("*")) and asyncio.run(pipeline.recover()) == []
    finally:
        services.close()
        services.store.close()
