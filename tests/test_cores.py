"""Knowledge cores: a collection exported from one data directory answers the same in another,
with no extraction; damaged or mismatched cores are refused with nothing imported."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import subprocess
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyoxigraph import NamedNode, Triple

from sparqlrag.config import Settings
from sparqlrag.extraction.knowledge import Knowledge
from sparqlrag.extraction.plans import Source
from sparqlrag.library import cores
from sparqlrag.library.cores import CoreInvalid, CoreMismatch
from sparqlrag.services import Models, Services
from sparqlrag.store import EmbeddedStore
from sparqlrag.store.facts import parse_fact
from sparqlrag.store.select import select
from sparqlrag.store.vocab import SPARQL_PREFIXES, Iris
from tests.conftest import ROOT, SPARQLRAG, LiveServer, start_server

BASE, ELSEWHERE = "http://kb.example/", "https://data.example.org/kb/"
QUESTION = "Where is the laboratory that Tim Berners-Lee worked at?"


class NoExtraction:
    """The extractor of the importing side: a core must bring its knowledge, never make it."""

    name, llm_name = "none", None

    async def extract(self, text: str, document_id: str) -> Knowledge:
        raise AssertionError("an import ran extraction")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Models:
    return Models.load(Settings(data_dir=tmp_path_factory.mktemp("models"), reranker_model=None))


def open_services(root: Path, models: Models, base: str = BASE, **kwargs: object) -> Services:
    root.mkdir(parents=True, exist_ok=True)
    settings = Settings(data_dir=root, base_iri=base, reranker_model=None)
    return Services.open(settings, EmbeddedStore(root / "store"), models=models, **kwargs)  # type: ignore[arg-type]


def close(services: Services) -> None:
    services.close()
    services.store.close()


@dataclass
class Exported:
    path: Path
    manifest: dict[str, Any]
    source: Services  # answering questions adds traces to it: what was exported is `quads`
    quads: list[tuple[str, str, str, str]]


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory, models: Models) -> Iterator[Exported]:
    """The demo corpus ingested (with an answered question, so a trace) and exported."""
    services = open_services(tmp_path_factory.mktemp("source"), models)
    corpus = sorted((ROOT / "sparqlrag" / "demo" / "corpus").glob("*.md"))
    asyncio.run(
        services.pipeline.ingest_many(
            services.collections.iris("default"), [Source(p.name, p.read_bytes()) for p in corpus]
        )
    )
    asyncio.run(services.graph_rag.answer(services.collections.iris("default"), "What did CERN build?"))
    path = tmp_path_factory.mktemp("cores") / "default.core.zip"
    manifest = asyncio.run(services.cores.export("default", path))
    yield Exported(path, manifest, services, graph_quads(services, Iris(BASE)))
    close(services)


def graph_quads(services: Services, iris: Iris) -> list[tuple[str, str, str, str]]:
    """The collection's quads, sorted; a blank node (a trace step) as "_", as a round trip renames them."""
    rows = select(
        services.store,
        f"""SELECT ?g ?s ?p ?o (isBlank(?s) AS ?bs) (isBlank(?o) AS ?bo) WHERE {{ GRAPH ?g {{ ?s ?p ?o }}
        VALUES ?g {{ <{iris.knowledge_graph.value}> <{iris.source_graph.value}> <{iris.trace_graph.value}> }} }}""",
    )
    return sorted(
        (
            r["g"],
            "_" if r["bs"] == "true" else r["s"],
            r["p"],
            "_" if r["bo"] == "true" else json.dumps(r["o"], sort_keys=True),
        )
        for r in rows
    )


def answer(services: Services) -> tuple[str, list[str], list[str]]:
    got = asyncio.run(services.graph_rag.answer(services.collections.iris("default"), QUESTION))
    return got.answer, [p.chunk for p in got.passages], [str(e.fact) for e in got.edges]


def test_an_imported_core_answers_the_same_with_no_extraction(core: Exported, models: Models, tmp_path: Path) -> None:
    path, manifest, source = core.path, core.manifest, core.source
    assert (
        manifest["counts"]["chunks"] == 5
        and manifest["counts"]["entities"] > 20
        and manifest["embedding_model"] == models.embedder.model_name
    )
    services = open_services(tmp_path, models, extractor=NoExtraction())
    try:
        result = asyncio.run(services.cores.import_(path))
        assert (result.collection, result.chunks, result.rebased_from) == ("default", 5, None)
        assert graph_quads(services, Iris(BASE)) == core.quads  # knowledge, provenance and traces, unchanged
        assert answer(services) == answer(source)  # same answer, same sources, same facts
        assert services.keywords.search("default", "Geneva", 5) == source.keywords.search("default", "Geneva", 5)
        assert (
            manifest["counts"]["facts"] > 20
            and services.vectors.count("default", "facts") == manifest["counts"]["facts"]
        )
        probe = models.embedder.embed_one("CERN is located near Geneva")
        assert services.vectors.search("default", "facts", probe, 3) == source.vectors.search(
            "default", "facts", probe, 3
        )
        info = asyncio.run(services.collections.get("default"))
        assert info is not None and (info.documents, info.chunks) == (5, 5)
    finally:
        close(services)


def test_a_core_imported_under_another_base_iri_moves_every_iri(core: Exported, models: Models, tmp_path: Path) -> None:
    path, manifest, source = core.path, core.manifest, core.source
    services = open_services(tmp_path, models, base=ELSEWHERE, extractor=NoExtraction())
    try:
        assert asyncio.run(services.cores.import_(path)).rebased_from == BASE
        quads = graph_quads(services, Iris(ELSEWHERE))
        assert len(quads) == manifest["counts"]["quads"]
        assert not any(BASE in term for quad in quads for term in quad)  # nothing left under the old base
        reifiers = select(
            services.store,
            SPARQL_PREFIXES
            + """SELECT ?st ?s ?p ?o WHERE {
            GRAPH ?g { ?st rdf:reifies <<( ?s ?p ?o )>> FILTER(isIRI(?o)) } }""",
        )
        assert len(reifiers) > 20  # each renamed after its moved fact, as an ingest here would name it
        assert all(
            r["st"] == Iris(ELSEWHERE).statement(Triple(NamedNode(r["s"]), NamedNode(r["p"]), NamedNode(r["o"]))).value
            for r in reifiers
        )
        got, want = answer(services), answer(source)
        assert got[0] == want[0] and got[1] == [c.replace(BASE, ELSEWHERE) for c in want[1]]
        _, payloads = services.vectors.points("default", "facts")  # each point renamed after its moved fact
        assert len(payloads) == manifest["counts"]["facts"] and not any(
            BASE in p["fact"] or BASE in p["iri"] for p in payloads
        )
        assert all(p["iri"] == Iris(ELSEWHERE).statement(parse_fact(p["fact"])).value for p in payloads)
    finally:
        close(services)


def test_a_core_imported_under_another_name_moves_every_iri_and_comes_back_whole(
    core: Exported, models: Models, tmp_path: Path
) -> None:
    """`default`'s core imported as `papers`: every graph, document, entity, reifier and trace
    IRI of the collection moves to the new name, the collection answers as the source did, and
    its own core imported back as `default` elsewhere is the original, quad for quad."""
    services = open_services(tmp_path / "a", models, extractor=NoExtraction())
    papers = Iris(BASE, "papers")
    try:
        result = asyncio.run(services.cores.import_(core.path, into="papers"))
        assert (result.collection, result.renamed_from, result.rebased_from) == ("papers", "default", None)
        quads = graph_quads(services, papers)
        assert len(quads) > 100 and graph_quads(services, Iris(BASE)) == []
        old = [f"{BASE}{segment}/default" for segment in ("graph", "collection", "id", "stmt", "doc", "trace")]
        assert not any(o in term for quad in quads for term in quad for o in old)  # nothing left under the old name
        info = asyncio.run(services.collections.get("papers"))
        assert info is not None and (info.name, info.documents, info.chunks) == ("papers", 5, 5)
        asyncio.run(services.cores.export("papers", tmp_path / "papers.zip"))  # (before an answer adds a trace)
        got = asyncio.run(services.graph_rag.answer(services.collections.iris("papers"), QUESTION))
        want = answer(core.source)
        assert got.answer == want[0] and [p.chunk for p in got.passages] == [
            c.replace(f"{BASE}doc/default/", f"{BASE}doc/papers/") for c in want[1]
        ]
        _, payloads = services.vectors.points("papers", "facts")
        assert len(payloads) == core.manifest["counts"]["facts"]
        assert all(p["iri"] == papers.statement(parse_fact(p["fact"])).value for p in payloads)
    finally:
        close(services)
    back = open_services(tmp_path / "b", models, extractor=NoExtraction())
    try:
        assert asyncio.run(back.cores.import_(tmp_path / "papers.zip", into="default")).renamed_from == "papers"
        assert graph_quads(back, Iris(BASE)) == core.quads
    finally:
        close(back)


def rewritten(path: Path, target: Path, member: str, change: bytes | dict[str, Any], checksum: bool = False) -> Path:
    """A copy of the core with one member replaced (bytes), or the manifest changed (a dict to
    merge); `checksum`: the manifest names the new member's checksum, as a forger would."""
    with zipfile.ZipFile(path) as old:
        members = {item: old.read(item) for item in old.namelist()}
    members[member] = (
        change if isinstance(change, bytes) else json.dumps({**json.loads(members[member]), **change}).encode()
    )
    if checksum:
        manifest = json.loads(members["manifest.json"])
        manifest["sha256"][member] = hashlib.sha256(members[member]).hexdigest()
        members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(target, "w") as new:
        for item, data in members.items():
            new.writestr(item, data)
    return target


def test_damaged_and_mismatched_cores_are_refused_with_nothing_imported(
    core: Exported, models: Models, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, manifest = core.path, core.manifest
    (tmp_path / "not-a-zip").write_bytes(b"PK but not really")
    services = open_services(tmp_path / "data", models, extractor=NoExtraction())
    try:
        refusals: list[tuple[Path, type[Exception], str]] = [
            (tmp_path / "not-a-zip", CoreInvalid, "not a zip file"),
            (
                rewritten(path, tmp_path / "a.zip", "graphs.trig", b"<not> <trig"),
                CoreInvalid,
                "graphs.trig does not match its checksum",
            ),
            (
                rewritten(path, tmp_path / "b.zip", "manifest.json", {"format": "something-else"}),
                CoreInvalid,
                "not a knowledge core",
            ),
            (rewritten(path, tmp_path / "c.zip", "manifest.json", {"version": 9}), CoreInvalid, "version 9"),
            (
                rewritten(path, tmp_path / "d.zip", "manifest.json", {"embedding_model": "BAAI/bge-small-en-v1.5"}),
                CoreMismatch,
                "bge-small",
            ),
            (
                rewritten(path, tmp_path / "e.zip", "manifest.json", {"ontology": "org"}),
                CoreMismatch,
                "ontology 'org', which is not loaded",
            ),
            (
                rewritten(path, tmp_path / "f.zip", "manifest.json", {"counts": {**manifest["counts"], "quads": 1}}),
                CoreInvalid,
                "number of quads",
            ),
            (rewritten(path, tmp_path / "g.zip", "manifest.json", {"dim": "384"}), CoreInvalid, "no valid 'dim'"),
            (
                rewritten(path, tmp_path / "h.zip", "manifest.json", {"sha256": ["not", "a", "map"]}),
                CoreInvalid,
                "no valid 'sha256'",
            ),
            (rewritten(path, tmp_path / "i.zip", "manifest.json", {"base_iri": ""}), CoreInvalid, "is not an http"),
            (
                rewritten(path, tmp_path / "j.zip", "manifest.json", {"collection": "Bad Name"}),
                CoreInvalid,
                "collection names are",
            ),
            (
                rewritten(path, tmp_path / "k.zip", "manifest.json", b"not json"),
                CoreInvalid,
                "manifest is unreadable",
            ),
            (
                rewritten(
                    path, tmp_path / "l.zip", "chunks.jsonl", b'{"iri": "http://kb.example/x"}\n' * 5, checksum=True
                ),
                CoreInvalid,
                "chunks vectors do not match their payloads",
            ),
            (
                rewritten(
                    path,
                    tmp_path / "m.zip",
                    "graphs.trig",
                    b"<http://elsewhere/g> { <http://a/s> <http://a/p> <http://a/o> . }",
                    checksum=True,
                ),
                CoreInvalid,
                "outside collection",
            ),
        ]
        for bad, error, message in refusals:
            with pytest.raises(error, match=message):
                asyncio.run(services.cores.import_(bad))
            assert services.store.count() == 0 and services.vectors.count("default", "chunks") == 0
        with monkeypatch.context() as patch:  # a zip bomb, as the limit sees it: more bytes unpacked than allowed
            patch.setattr(cores, "MAX_UNPACKED_BYTES", 1000)
            with pytest.raises(CoreInvalid, match="unpacks to .* bytes, over the 1000 byte limit"):
                asyncio.run(services.cores.import_(path))
        asyncio.run(services.cores.import_(path))
        with pytest.raises(CoreMismatch, match="has data already"):
            asyncio.run(services.cores.import_(path))  # a second import would merge two pasts
    finally:
        close(services)


def test_an_import_that_fails_part_way_is_undone(
    core: Exported, models: Models, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last write of an import (the keyword rows) fails as on a full disk: the quads and
    vectors already written go, the collection is as it was, and the import can be run again."""
    services = open_services(tmp_path / "data", models, extractor=NoExtraction())
    written: list[int] = []

    def full_disk(*_: object) -> None:
        written.extend((services.store.count(), services.vectors.count("default", "chunks")))
        raise sqlite3.OperationalError("database or disk is full")

    try:
        before = services.store.count(), asyncio.run(services.collections.get("default"))
        with monkeypatch.context() as patch:
            patch.setattr(services.collections.keywords, "add", full_disk)
            with pytest.raises(sqlite3.OperationalError):
                asyncio.run(services.cores.import_(core.path))
        assert written[0] > before[0] and written[1] == core.manifest["counts"]["chunks"]  # what the undo undid
        assert (services.store.count(), asyncio.run(services.collections.get("default"))) == before
        assert services.vectors.count("default", "chunks") == 0 == services.vectors.count("default", "entities")
        assert services.keywords.iris("default") == set()
        asyncio.run(services.cores.import_(core.path))
        assert graph_quads(services, Iris(BASE)) == core.quads
    finally:
        close(services)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live, stop = start_server(tmp_path_factory.mktemp("served"), base_iri=BASE)
    yield live
    stop()


def test_cores_over_http(server: LiveServer, client: httpx.Client, core: Exported) -> None:
    path = core.path
    assert client.post("/api/v1/collections", json={"name": "lab"}).status_code == 201
    renamed = client.post("/api/v1/collections/lab/core", content=path.read_bytes())  # the core holds `default`
    assert renamed.status_code == 201 and renamed.json()["renamed_from"] == "default", renamed.text
    assert client.get("/api/v1/collections/lab").json()["chunks"] == 5
    before = server.dataset()
    bad = client.post("/api/v1/collections/default/core", content=b"not a core")
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_core" and "not a zip file" in bad.json()["detail"]
    assert server.dataset() == before
    imported = client.post("/api/v1/collections/default/core", content=path.read_bytes())
    assert imported.status_code == 201 and imported.json()["chunks"] == 5, imported.text
    exported = client.get("/api/v1/collections/default/core")
    assert exported.status_code == 200 and exported.headers["content-type"] == "application/zip"
    assert 'filename="default.core.zip"' in exported.headers["content-disposition"]
    (server.settings.data_dir / "again.zip").write_bytes(exported.content)
    with zipfile.ZipFile(server.settings.data_dir / "again.zip") as again, zipfile.ZipFile(path) as first:
        assert json.loads(again.read("manifest.json"))["counts"] == json.loads(first.read("manifest.json"))["counts"]
        assert again.read("chunks.jsonl") == first.read("chunks.jsonl")  # what came in goes out again
    assert client.get("/api/v1/collections/nothing/core").status_code == 404
    before = server.dataset()
    missing = client.delete("/api/v1/collections/nothing")
    assert missing.status_code == 404 and missing.json()["error"] == "collection_not_found"
    assert server.dataset() == before


def test_hostile_imports_under_another_name_are_refused_with_the_store_unchanged(
    server: LiveServer, client: httpx.Client, core: Exported, tmp_path: Path
) -> None:
    """A core posted to a collection other than its own: a bad name is a 400 before the body is
    read, a collection with data a 409, and a core with quads outside its collection's graphs
    stays refused (400) under the new name; each leaves the store as it was."""
    assert client.post("/api/v1/collections/taken/core", content=core.path.read_bytes()).status_code == 201
    forged = rewritten(
        core.path,
        tmp_path / "forged.zip",
        "graphs.trig",
        f"<{BASE}graph/taken> {{ <{BASE}id/taken/x> <{BASE}rel/p> <{BASE}id/taken/y> . }}".encode(),
        checksum=True,
    )
    before = server.dataset()
    for path, posted, status, error, detail in [
        ("/api/v1/collections/Bad%20Name/core", core.path, 400, "bad_collection", "collection names are"),
        ("/api/v1/collections/taken/core", core.path, 409, "core_mismatch", "has data already"),
        ("/api/v1/collections/fresh/core", forged, 400, "invalid_core", "outside collection"),
    ]:
        refused = client.post(path, content=posted.read_bytes())
        assert refused.status_code == status and refused.json()["error"] == error, refused.text
        assert detail in refused.json()["detail"] and "Traceback" not in refused.text
        assert server.dataset() == before
    assert client.get("/api/v1/collections/fresh").status_code == 404


def test_core_export_and_import_on_the_command_line(core: Exported, tmp_path: Path) -> None:
    path = core.path
    run = [SPARQLRAG, "core", "import", str(path), "--data-dir", str(tmp_path / "d"), "--base-iri", BASE]
    done = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "imported default: " in done.stdout, done.stderr
    again = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "has data already" in again.stderr and "Traceback" not in again.stderr
    renamed = subprocess.run([*run, "--collection", "lab"], capture_output=True, text=True, timeout=300)
    assert renamed.returncode == 0 and "imported lab: " in renamed.stdout and "(exported as default)" in renamed.stdout
    bad = subprocess.run([*run, "--collection", "Lab Two"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "collection names are" in bad.stderr and "Traceback" not in bad.stderr
    options = ["--data-dir", str(tmp_path / "d"), "--base-iri", BASE]
    export_to = [SPARQLRAG, "core", "export", "default"]
    export = subprocess.run(
        [*export_to, str(tmp_path / "out.zip"), *options], capture_output=True, text=True, timeout=300
    )
    assert (
        export.returncode == 0 and "exported default to" in export.stderr and zipfile.is_zipfile(tmp_path / "out.zip")
    )
    assert export.stdout == ""  # stdout stays for answers; the status line is on stderr
    here = tmp_path / "here"
    here.mkdir()
    unnamed = subprocess.run([*export_to, *options], capture_output=True, text=True, timeout=300, cwd=here)
    assert unnamed.returncode == 0 and f"exported default to {here / 'default.core.zip'}:" in unnamed.stderr
    assert zipfile.is_zipfile(here / "default.core.zip") and unnamed.stdout == ""
    kept = (here / "default.core.zip").read_bytes()
    again = subprocess.run([*export_to, *options], capture_output=True, text=True, timeout=300, cwd=here)
    assert again.returncode == 2 and "default.core.zip exists already: name the file" in again.stderr
    assert (here / "default.core.zip").read_bytes() == kept  # a file nobody named is never replaced
    nowhere = subprocess.run(
        [*export_to, str(tmp_path / "missing" / "out.zip"), *options], capture_output=True, text=True, timeout=300
    )
    assert nowhere.returncode == 2 and "cannot write " in nowhere.stderr and "Traceback" not in nowhere.stderr
