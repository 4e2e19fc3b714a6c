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

import pytest

from sparqlrag.extraction.chunker import split
from sparqlrag.extraction.offline import OfflineExtractor
from sparqlrag.extraction.plans import Source
from sparqlrag.library import librarian
from sparqlrag.library.files import Upload, write_whole
from sparqlrag.services import Services
from sparqlrag.store import StoreUnavailable, WorkerStore
from sparqlrag.store import supervisor as supervisor_module
from sparqlrag.store.select import select
from tests.conftest import unstartable
from tests.ingest_child import build, long_text

ROOT = Path(__file__).resolve().parent.parent


def killed_child(data: Path, *options: str, marker: str = "*.json") -> None:
    """tests/ingest_child.py run on `data`, killed with SIGKILL once it has stalled, leaving
    a `marker` in the pending folder."""
    child = subprocess.Popen([sys.executable, "-m", "tests.ingest_child", str(data), *options], cwd=ROOT)
    deadline = time.monotonic() + 60
    while not (data / "stalled").exists():  # the child is waiting for the kill
        assert child.poll() is None, "the child ended before it stalled"
        assert time.monotonic() < deadline, "the child did not stall within a minute"
        time.sleep(0.02)
    assert any((data / "pending").glob(marker))  # the marker recovery works from
    os.kill(child.pid, signal.SIGKILL)
    child.wait()


def test_kill_during_ingest_then_recover(tmp_path: Path) -> None:
    data, reference = tmp_path / "killed", tmp_path / "uninterrupted"
    data.mkdir()
    reference.mkdir()
    killed_child(data)

    services = build(data, OfflineExtractor())
    pipeline = services.pipeline
    iris = services.collections.iris("default")
    chunks = len(split(long_text(), pipeline.chunk_size, pipeline.chunk_overlap))
    try:
        (info,) = librarian.documents(pipeline.store, iris)
        assert info.status == "processing" and info.chunks == 0  # nothing half-written, nothing "ready"
        assert services.vectors.count("default", "chunks") == 0 and _knowledge(services) == (set(), set())
        (result,) = asyncio.run(services.recovery.recover())
        assert not isinstance(result, Exception) and (result.status, result.chunks_added) == ("ready", chunks)
        (info,) = librarian.documents(pipeline.store, iris)
        assert (info.status, info.chunks) == ("ready", chunks)
        assert not any((data / "pending").glob("*"))
        assert (
            asyncio.run(pipeline.ingest(services.collections.iris("default"), "long", long_text().encode())).status
            == "unchanged"
        )
        recovered = _knowledge(services)
    finally:
        services.close()
        services.store.close()
    uninterrupted = build(reference, OfflineExtractor())
    try:
        asyncio.run(
            uninterrupted.pipeline.ingest(uninterrupted.collections.iris("default"), "long", long_text().encode())
        )
        _, reifiers = recovered
        assert recovered == _knowledge(uninterrupted) and len(reifiers) > chunks  # the same graph and provenance
    finally:
        uninterrupted.close()
        uninterrupted.store.close()


def _knowledge(services: Services) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
    """The collection's knowledge graph (its triples), and its provenance: each fact reifier
    with the (s, p, o) it reifies."""
    iris = services.collections.iris("default")
    triples = select(services.store, f"SELECT ?s ?p ?o WHERE {{ GRAPH <{iris.knowledge_graph.value}> {{ ?s ?p ?o }} }}")
    reifiers = select(
        services.store,
        f"""SELECT ?r ?s ?p ?o WHERE {{ GRAPH <{iris.source_graph.value}> {{
            ?r <http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> ?t }}
            BIND(SUBJECT(?t) AS ?s) BIND(PREDICATE(?t) AS ?p) BIND(OBJECT(?t) AS ?o) }}""",
    )
    return {(r["s"], r["p"], r["o"]) for r in triples}, {(r["r"], r["s"], r["p"], r["o"]) for r in reifiers}


def test_a_marker_that_cannot_be_replayed_is_dropped(tmp_path: Path) -> None:
    services = build(tmp_path, OfflineExtractor())
    try:
        services.library.save(Upload("default", "empty", None, None, None), b"")  # an empty document cannot be ingested
        services.library.pending_dir.mkdir(parents=True, exist_ok=True)
        (services.library.pending_dir / "lost.json").write_text(
            '{"collection": "default", "document_id": "lost", "media_type": null, "filename": null, "title": null}'
        )
        results = asyncio.run(services.recovery.recover())
        assert sorted(str(r) for r in results) == [
            "the document is empty",
            "the library holds no copy of document 'lost' in collection 'default'",
        ]
        assert not any(services.library.pending_dir.glob("*")) and asyncio.run(services.recovery.recover()) == []
    finally:
        services.close()
        services.store.close()


def test_a_library_write_cut_short_leaves_the_file_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A marker (or kept copy) is whole or as before: the torture loop found a marker left empty
    by a kill mid-write, which recovery could not read. Cut short here by a full disk at the end."""
    target = tmp_path / "marker.json"
    write_whole(target, b'{"round": 1}')

    def disk_full(self: Path, target: Path) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "replace", disk_full)
    with pytest.raises(OSError):
        write_whole(target, b'{"round": 2}')
    assert target.read_bytes() == b'{"round": 1}' and [p.name for p in tmp_path.iterdir()] == ["marker.json"]


def test_a_queued_document_whose_ingest_cannot_be_resumed_is_failed_not_queued_for_ever(tmp_path: Path) -> None:
    """Accepted in the background and never run (the process ended), then its marker cannot be
    replayed (the library copy is gone; a torn marker did the same before markers were written
    whole): recovery records it `failed`, so a client waiting for `ready` is not left waiting."""
    services = build(tmp_path, OfflineExtractor())
    pipeline = services.pipeline
    iris = services.collections.iris("default")
    try:
        asyncio.run(
            pipeline.submit(services.collections.iris("default"), [Source("late", b"Ada Lovelace was born in London.")])
        )
        assert [d.status for d in librarian.documents(services.store, iris)] == ["queued"]
        for copy in (services.library.library_dir / "default").glob("*.bin"):
            copy.unlink()
        (error,) = asyncio.run(services.recovery.recover())
        assert "holds no copy of document 'late'" in str(error)
        assert [d.status for d in librarian.documents(services.store, iris)] == ["failed"]
        assert services.library.markers() == []
    finally:
        services.close()
        services.store.close()


def test_a_pending_ingest_the_store_cannot_take_yet_stays_for_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recovery while the store worker cannot be started again: the marker stays (the document
    is not given up), and the next recovery, with the store back, finishes it."""
    monkeypatch.setattr(supervisor_module, "RETRY_START", 0.2)
    store = WorkerStore(tmp_path / "store")
    services = build(tmp_path, OfflineExtractor(), store)
    try:
        asyncio.run(
            services.pipeline.submit(
                services.collections.iris("default"), [Source("late", b"Ada Lovelace was born in London.")]
            )
        )
        with unstartable(store, tmp_path / "store"):
            (error,) = asyncio.run(services.recovery.recover())
            assert isinstance(error, StoreUnavailable) and len(services.library.markers()) == 1
        monkeypatch.setattr(supervisor_module, "RETRY_START", 0.0)  # as if RETRY_START had passed
        (result,) = asyncio.run(services.recovery.recover())
        assert not isinstance(result, Exception) and result.status == "ready"
        assert services.library.markers() == []
    finally:
        services.close()
        store.close()


def test_index_rows_of_an_ingest_killed_before_its_commit_are_swept_before_it_resumes(tmp_path: Path) -> None:
    killed_child(tmp_path, "--after-indexing")
    services = build(tmp_path, OfflineExtractor())
    pipeline = services.pipeline
    chunks = len(split(long_text(), pipeline.chunk_size, pipeline.chunk_overlap))
    try:
        (info,) = librarian.documents(pipeline.store, services.collections.iris("default"))
        assert info.chunks == 0 and _knowledge(services) == (set(), set())  # nothing committed
        assert services.vectors.count("default", "chunks") == chunks  # but indexed
        assert services.vectors.count("default", "entities") > 0 and services.keywords.count("default") == chunks
        assert _index_rows(services)["graph"] > chunks  # the graph index's passages and mentions too
        asyncio.run(services.recovery.sweep_crashed())
        assert _index_rows(services) == {"chunks": 0, "entities": 0, "facts": 0, "keywords": 0, "graph": 0}
        (result,) = asyncio.run(services.recovery.recover())
        assert not isinstance(result, Exception) and result.status == "ready"
        graph = services.indexer.graph
        written = graph.rows("default")
        graph.rebuild(services.collections.iris("default"))
        assert graph.rows("default") == written and len(written[1]) > chunks  # as the store says
        assert services.vectors.count("default", "chunks") == chunks and services.keywords.count("default") == chunks
        assert services.vectors.count("default", "entities") > 0 and services.vectors.count("default", "facts") > 0
        asyncio.run(services.recovery.sweep_crashed())  # no marker left: nothing to look at
        assert services.vectors.count("default", "chunks") == chunks
    finally:
        services.close()
        services.store.close()


def test_a_pending_document_whose_collection_is_gone_is_dropped_with_its_copy(tmp_path: Path) -> None:
    """Deleting a collection takes its pending markers along; a collection that disappeared some
    other way (its registration and graphs dropped over SPARQL while the server was down) is not
    created again."""
    services = build(tmp_path, OfflineExtractor())
    library = services.library
    try:
        for name in ("deleted", "dropped"):
            asyncio.run(services.collections.create(name))
            library.save(Upload(name, "doc", None, None, None), long_text().encode())  # what a killed ingest leaves
        assert len(library.markers()) == 2
        assert asyncio.run(services.collections.delete("deleted"))
        assert [library.pending(m).collection for m in library.markers()] == ["dropped"]
        dropped = services.collections.iris("dropped")
        services.store.update(
            f"DROP SILENT GRAPH <{dropped.source_graph.value}> ; {librarian.unregister_collection(dropped)}"
        )
        asyncio.run(services.recovery.sweep_crashed())
        assert any((library.library_dir / "dropped").iterdir())
        (result,) = asyncio.run(services.recovery.recover())
        assert isinstance(result, librarian.UnknownCollection)
        assert library.markers() == [] and not (library.library_dir / "dropped").exists()
        assert not librarian.collection_exists(services.store, dropped)
    finally:
        services.close()
        services.store.close()


def _index_rows(services: Services, collection: str = "default") -> dict[str, int]:
    vectors = services.vectors
    kinds = {kind: vectors.count(collection, kind) for kind in ("chunks", "entities", "facts")}
    graph = sum(len(rows) for rows in services.indexer.graph.rows(collection))
    return kinds | {"keywords": services.keywords.count(collection), "graph": graph}


def test_a_forget_killed_part_way_is_swept_at_the_next_start(tmp_path: Path) -> None:
    """Killed once the store has dropped the document and before its index rows went: the next
    start removes them (a mark in pending/writes names the collection)."""
    killed_child(tmp_path, "--forget", marker="writes/forget-*.json")
    services = build(tmp_path, OfflineExtractor())
    try:
        assert librarian.documents(services.store, services.collections.iris("default")) == []
        assert _index_rows(services)["chunks"] > 0  # what the kill left behind
        asyncio.run(services.repair())
        assert _index_rows(services) == {"chunks": 0, "entities": 0, "facts": 0, "keywords": 0, "graph": 0}
        assert _knowledge(services) == (set(), set()) and services.library.begun("forget") == []
    finally:
        services.close()
        services.store.close()


def test_a_core_import_killed_part_way_is_undone_at_the_next_start(tmp_path: Path) -> None:
    """Killed once the core's quads and vectors are written, before its keyword rows: the next
    start undoes the import, and it can be run again."""
    (tmp_path / "source").mkdir()
    source = build(tmp_path / "source", OfflineExtractor())
    try:
        asyncio.run(source.pipeline.ingest(source.collections.iris("default"), "long", long_text().encode()))
        asyncio.run(source.cores.export("default", tmp_path / "long.core.zip"))
        exported, rows = _knowledge(source), _index_rows(source)
    finally:
        source.close()
        source.store.close()
    data = tmp_path / "imported"
    data.mkdir()
    killed_child(data, "--import", str(tmp_path / "long.core.zip"), marker="writes/import-*.json")
    services = build(data, OfflineExtractor())
    try:
        assert services.store.count() > 0 and _index_rows(services)["chunks"] > 0  # half an import
        asyncio.run(services.repair())
        assert services.store.count() == 0
        assert _index_rows(services) == {"chunks": 0, "entities": 0, "facts": 0, "keywords": 0, "graph": 0}
        asyncio.run(services.cores.import_(tmp_path / "long.core.zip"))
        assert _knowledge(services) == exported and _index_rows(services) == rows
    finally:
        services.close()
        services.store.close()


def test_a_collection_delete_killed_part_way_is_finished_at_the_next_start(tmp_path: Path) -> None:
    """Killed once the collection's graphs and vectors are dropped, before its keyword rows: the
    next start drops the rest, so a collection created again under the name holds only its own."""
    killed_child(tmp_path, "--drop", marker="writes/drop-*.json")
    services = build(tmp_path, OfflineExtractor())
    try:
        assert not asyncio.run(services.collections.exists("gone"))
        assert _index_rows(services, "gone")["keywords"] > 0  # what the kill left behind
        asyncio.run(services.repair())
        assert _index_rows(services, "gone") == {"chunks": 0, "entities": 0, "facts": 0, "keywords": 0, "graph": 0}
        assert services.library.begun("drop") == []
        asyncio.run(services.collections.create("gone"))
        asyncio.run(
            services.pipeline.ingest(services.collections.iris("gone"), "short", b"Ada Lovelace was born in London.")
        )
        assert _index_rows(services, "gone")["keywords"] == 1
    finally:
        services.close()
        services.store.close()
