"""The store layer without HTTP: EmbeddedStore on disk, the update-dataset rewriter, WorkerStore."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyoxigraph import CanonicalizationAlgorithm, Dataset, RdfFormat, parse

from sparqlrag.store import (
    DataSyntaxError,
    EmbeddedStore,
    GraphNotFound,
    NotAcceptable,
    QuerySyntaxError,
    QueryTimeout,
    StoreLocked,
    WorkerStore,
    embedded,
)
from sparqlrag.store.base import RemoteAccessRefused
from sparqlrag.store.data_dir import BaseIriChanged, prepare_data_dir
from tests.conftest import restarted, seeded_worker

TRIG_WITH_TRIPLE_TERMS = b"""
@prefix ex: <http://example.org/> .
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
ex:s ex:p "default graph" .
ex:g1 { ex:a ex:knows ex:b . ex:b ex:name "B"@en ; ex:age 42 . _:x ex:p _:y . }
ex:g2 { ex:r rdf:reifies <<( ex:a ex:knows ex:b )>> ; ex:source ex:doc1 . }
"""
SLOW_QUERY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"


def canonical(data: bytes, fmt: RdfFormat) -> Dataset:
    dataset = Dataset(parse(data, format=fmt))
    dataset.canonicalize(CanonicalizationAlgorithm.UNSTABLE)
    return dataset


def nquads(store: EmbeddedStore) -> bytes:
    out = io.BytesIO()
    store.dump(out, RdfFormat.N_QUADS)
    return b"".join(sorted(out.getvalue().splitlines(keepends=True)))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    opened = EmbeddedStore(tmp_path / "store")
    yield opened
    opened.close()


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_trig_dump_reloads_isomorphic_with_triple_terms(store: EmbeddedStore, tmp_path: Path) -> None:
    store.load(write(tmp_path, "in.trig", TRIG_WITH_TRIPLE_TERMS), RdfFormat.TRIG)
    store.dump(tmp_path / "out.trig", RdfFormat.TRIG)
    fresh = EmbeddedStore(tmp_path / "fresh")
    fresh.load(tmp_path / "out.trig", RdfFormat.TRIG)
    fresh.dump(tmp_path / "again.trig", RdfFormat.TRIG)
    assert b"<<(" in (tmp_path / "out.trig").read_bytes()
    assert canonical(TRIG_WITH_TRIPLE_TERMS, RdfFormat.TRIG) == canonical(
        (tmp_path / "again.trig").read_bytes(), RdfFormat.TRIG
    )
    assert fresh.count() == 7


@pytest.mark.parametrize("fmt,suffix", [(RdfFormat.N_QUADS, "nq"), (RdfFormat.TRIG, "trig")])
def test_bulk_load_matches_transactional_load(
    store: EmbeddedStore, tmp_path: Path, fmt: RdfFormat, suffix: str
) -> None:
    source = write(tmp_path, "in.trig", TRIG_WITH_TRIPLE_TERMS)
    store.load(source, RdfFormat.TRIG)
    store.dump(tmp_path / f"dump.{suffix}", fmt)
    bulk = EmbeddedStore(tmp_path / "bulk")
    bulk.load(tmp_path / f"dump.{suffix}", fmt, bulk=True)
    assert bulk.count() == store.count() == 7


def test_bad_data_leaves_store_unchanged(store: EmbeddedStore, tmp_path: Path) -> None:
    store.load(write(tmp_path, "in.trig", TRIG_WITH_TRIPLE_TERMS), RdfFormat.TRIG)
    before = nquads(store)
    bad = write(tmp_path, "bad.ttl", b'<http://a> <http://b> "ok" .\n<http://a> <http://b> .\n')
    for action in (
        lambda: store.load(bad, RdfFormat.TURTLE, graph="http://example.org/g1"),
        lambda: store.load(bad, RdfFormat.TURTLE, bulk=True),
        lambda: store.load(bad, RdfFormat.TURTLE, graph="http://example.org/g1", replace=True),
        lambda: store.load(
            write(tmp_path, "bad.nq", b"<http://a> <http://b> <http://c> <http://g> .\nnope\n"),
            RdfFormat.N_QUADS,
            replace=True,
        ),
        lambda: store.replace_graph("http://example.org/g1", bad, RdfFormat.TURTLE, None),
        lambda: store.add_to_graph(None, bad, RdfFormat.TURTLE, None),
    ):
        with pytest.raises(DataSyntaxError, match="line 2"):
            action()
        assert nquads(store) == before
    assert "urn:sparqlrag:scratch" not in " ".join(store.named_graphs())


def test_bulk_load_into_empty_store_skips_the_check_pass(
    store: EmbeddedStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks: list[Path] = []
    monkeypatch.setattr(embedded, "check_syntax", lambda source, *_: checks.append(source))
    good = write(tmp_path, "good.nq", b"<http://a> <http://b> <http://c> <http://g> .\n")
    store.load(good, RdfFormat.N_QUADS, bulk=True)
    assert checks == [] and store.count() == 1
    store.load(good, RdfFormat.N_QUADS, bulk=True)
    assert checks == [good]  # not empty any more: checked first


def test_failed_bulk_load_into_empty_store_leaves_it_empty(store: EmbeddedStore, tmp_path: Path) -> None:
    lines = b"".join(b"<http://s%d> <http://p> <http://o> <http://g> .\n" % i for i in range(50_000))
    bad = write(tmp_path, "bad.nq", lines + b"<http://oops> .\n")
    with pytest.raises(DataSyntaxError, match="line 50001"):
        store.load(bad, RdfFormat.N_QUADS, bulk=True)
    assert store.count() == 0 and store.named_graphs() == []


def test_replace_graph_is_atomic_swap(store: EmbeddedStore, tmp_path: Path) -> None:
    store.load(write(tmp_path, "in.trig", TRIG_WITH_TRIPLE_TERMS), RdfFormat.TRIG)
    existed = store.replace_graph(
        "http://example.org/g1",
        write(tmp_path, "n.nt", b"<http://n> <http://p> <http://o> .\n"),
        RdfFormat.N_TRIPLES,
        None,
    )
    assert existed
    assert (
        store.serialize_graph("http://example.org/g1", RdfFormat.N_TRIPLES) == b"<http://n> <http://p> <http://o> .\n"
    )
    assert not store.replace_graph("http://example.org/new", write(tmp_path, "e.nt", b""), RdfFormat.N_TRIPLES, None)
    assert store.graph_exists("http://example.org/new")
    assert store.named_graphs() == ["http://example.org/g1", "http://example.org/g2", "http://example.org/new"]


def test_graph_errors(store: EmbeddedStore) -> None:
    with pytest.raises(GraphNotFound):
        store.serialize_graph("http://missing", RdfFormat.TURTLE)
    with pytest.raises(GraphNotFound):
        store.drop_graph("http://missing")
    store.update("INSERT DATA { GRAPH <http://g> { <http://r> <http://p> <<( <http://a> <http://b> <http://c> )>> } }")
    with pytest.raises(NotAcceptable, match="JSON-LD"):
        store.serialize_graph("http://g", RdfFormat.JSON_LD)


def test_query_negotiates_per_result_kind(store: EmbeddedStore) -> None:
    store.update('INSERT DATA { GRAPH <http://g> { <http://s> <http://p> "o" } }')
    accept = "text/csv, text/turtle;q=0.5"
    assert store.query("SELECT * WHERE { ?s ?p ?o }", accept=accept, union_default_graph=True).media_type.startswith(
        "text/csv"
    )
    construct = store.query("CONSTRUCT WHERE { ?s ?p ?o }", accept=accept, union_default_graph=True)
    assert (construct.kind, construct.body) == ("graph", b'<http://s> <http://p> "o" .\n')
    assert store.query("ASK { ?s ?p ?o }", union_default_graph=False).body == b'{"head":{},"boolean":false}'
    with pytest.raises(NotAcceptable):
        store.query("SELECT * WHERE { ?s ?p ?o }", accept="image/png")
    with pytest.raises(QuerySyntaxError, match="1:"):
        store.query("SELECT * WHERE { ?s ?p }")


def test_describe_gives_each_triple_once(store: EmbeddedStore) -> None:
    """A triple two graphs state is one triple of the union's description (an RDF graph is a set)."""
    store.update(
        'INSERT DATA { GRAPH <http://g1> { <http://s> <http://p> "o" ; <http://q> 1 } '
        'GRAPH <http://g2> { <http://s> <http://p> "o" } }'
    )
    described = store.query("DESCRIBE <http://s>", accept="application/n-triples", union_default_graph=True)
    assert sorted(described.body.decode().splitlines()) == [
        '<http://s> <http://p> "o" .',
        '<http://s> <http://q> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .',
    ]


def test_remote_access_is_refused_by_default(store: EmbeddedStore) -> None:
    with pytest.raises(RemoteAccessRefused, match="SERVICE"):
        store.query("SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }")
    with pytest.raises(RemoteAccessRefused, match="LOAD"):
        store.update("LOAD <http://example.org/data.ttl>")
    # the words alone are harmless where the store runs sandboxed: only a real SERVICE is refused
    assert store.query('SELECT * WHERE { ?service <http://p> "SERVICE" . ?s <http://load> ?o }').kind == "solutions"


def test_update_dataset_applies(store: EmbeddedStore) -> None:
    store.update(
        "INSERT DATA "
        '{ GRAPH <http://d> { <http://s> <http://p> "in d" } GRAPH <http://e> { <http://s> <http://p> "in e" } }'
    )
    store.update(
        "INSERT { GRAPH <http://out> { ?s <http://copied> ?o } } WHERE { ?s <http://p> ?o }", using_graphs=["http://d"]
    )
    result = store.query("SELECT ?o WHERE { GRAPH <http://out> { ?s ?p ?o } }", accept="text/csv")
    assert result.body.split() == [b"o", b"in", b"d"]


def test_second_opener_gets_a_clear_error(tmp_path: Path) -> None:
    first = EmbeddedStore(tmp_path / "store")
    with pytest.raises(StoreLocked, match="in use by another process"):
        EmbeddedStore(tmp_path / "store")
    first.close()
    EmbeddedStore(tmp_path / "store").close()


def test_memtables_are_flushed_as_writes_add_up(store: EmbeddedStore, tmp_path: Path) -> None:
    """Without periodic flushes RocksDB's memtables held every write, and RSS grew with the corpus."""
    assert store.path is not None

    def tables() -> int:
        return len(list(store.path.glob("*.sst")))  # type: ignore[union-attr]

    before, written, batch = tables(), 0, 0
    while written < embedded.FLUSH_AFTER_BYTES // 2:
        data = "".join(f'<http://e/{batch}/{k}> <http://p> "{k} lorem ipsum" <http://g> .\n' for k in range(500))
        store.add_quads(data.encode())
        written, batch = written + len(data), batch + 1
    assert tables() == before  # below the threshold the writes stay in memory
    while written < embedded.FLUSH_AFTER_BYTES + 1:
        objects = " , ".join(f'"{k} dolor sit amet"' for k in range(400))
        store.update(f"INSERT DATA {{ <http://e/u{batch}> <http://p> {objects} }}")
        written, batch = written + len(objects), batch + 1
    assert tables() > before
    asked = store.query("ASK { GRAPH <http://g> { <http://e/0/499> <http://p> ?o } }", accept="application/json")
    assert json.loads(asked.body)["boolean"] is True


def test_base_iri_is_pinned(tmp_path: Path) -> None:
    prepare_data_dir(tmp_path, "http://kb.example/")
    prepare_data_dir(tmp_path, "http://kb.example/")
    assert json.loads((tmp_path / "sparqlrag.json").read_text()) == {"base_iri": "http://kb.example/"}
    with pytest.raises(BaseIriChanged, match="http://kb.example/"):
        prepare_data_dir(tmp_path, "http://other.example/")


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[WorkerStore]:
    opened = seeded_worker(tmp_path, predicates=7)
    yield opened
    opened.close()


def test_worker_answers_like_the_embedded_store(worker: WorkerStore, tmp_path: Path) -> None:
    assert worker.count() == 2000
    worker.update('INSERT DATA { GRAPH <http://g> { <http://s> <http://p> "o" } }')
    assert worker.named_graphs() == ["http://g"]
    with pytest.raises(GraphNotFound):
        worker.serialize_graph("http://missing", RdfFormat.TURTLE)
    assert worker.serialize_graph("http://g", RdfFormat.N_TRIPLES) == b'<http://s> <http://p> "o" .\n'


def test_worker_timeout_kills_query_and_keeps_serving(worker: WorkerStore) -> None:
    old_pid = worker._worker.process.pid  # type: ignore[union-attr]
    answers: list[tuple[float, bytes]] = []  # (when answered, body)
    errors: list[BaseException] = []
    stop = threading.Event()

    def steady_reader() -> None:
        try:
            while not stop.is_set():
                answers.append((time.monotonic(), worker.query("ASK { <http://e/s1> ?p ?o }", accept="text/csv").body))
        except BaseException as error:  # seen by the test, not lost with the thread
            errors.append(error)

    reader = threading.Thread(target=steady_reader)
    reader.start()
    started = time.monotonic()
    with pytest.raises(QueryTimeout, match="1 s limit"):
        worker.query(SLOW_QUERY, timeout=1.0)
    ended = time.monotonic()
    stop.set()
    reader.join()
    assert errors == []
    assert any(started < when < ended for when, _ in answers)  # reads were answered while it ran
    assert {body for _, body in answers} == {b"true"}
    assert restarted(worker, 1) and worker.restarts == 1
    assert worker._worker.process.pid != old_pid  # type: ignore[union-attr]
    assert worker.count() == 2000  # the new process sees the same store


def test_worker_timeout_waits_for_running_write(worker: WorkerStore) -> None:
    slow_write = (
        "INSERT { <http://x> <http://count> ?n } WHERE { { SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f } } }"
    )
    writer = threading.Thread(target=worker.update, args=(slow_write,))
    writer.start()
    deadline = time.monotonic() + 30
    while not (worker._worker and worker._worker.writes):  # the write is in the store process: the kill must wait
        assert writer.is_alive() and time.monotonic() < deadline
        time.sleep(0.005)
    with pytest.raises(QueryTimeout):
        worker.query(SLOW_QUERY, timeout=0.2)
    writer.join()
    assert worker.query("ASK { <http://x> <http://count> 4000000 }").body == b'{"head":{},"boolean":true}'
