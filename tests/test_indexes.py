"""The vector indexes (local: SQLite and matrices; Qdrant: qdrant-client, against its in-process
stand-in for a server) and the keyword index (SQLite FTS5 BM25)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from sparqlrag.models.embedder import Embedder
from sparqlrag.store import local_vectors
from sparqlrag.store.keyword_index import KeywordIndex
from sparqlrag.store.local_vectors import LocalVectors
from sparqlrag.store.qdrant_vectors import QdrantVectors
from sparqlrag.store.shortlist import Shortlist
from sparqlrag.store.vector_index import VectorIndex, alias_facet
from sparqlrag.store.vocab import InvalidName

PASSAGES = {
    "http://kb/c/1": "Marie Curie was born in Warsaw and studied physics in Paris.",
    "http://kb/c/2": "The Eiffel Tower is a wrought-iron lattice tower in Paris.",
    "http://kb/c/3": "Bread is made from flour, water and yeast.",
}


@pytest.fixture(params=["local", "qdrant"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorIndex]:
    """Each backend, empty, for the behaviour both must share."""
    opened: VectorIndex = (
        LocalVectors(384, tmp_path / "vectors.sqlite")
        if request.param == "local"
        else QdrantVectors(384, location=":memory:")
    )
    yield opened
    opened.close()


def test_a_vector_index_writes_searches_and_deletes(index: VectorIndex, embedder: Embedder) -> None:
    iris = list(PASSAGES)
    index.upsert(
        "default", "chunks", iris, embedder.embed(list(PASSAGES.values())), [{"text": t} for t in PASSAGES.values()]
    )
    index.upsert("other", "chunks", iris[:1], embedder.embed([PASSAGES[iris[0]]]), [{}])  # collections are separate
    hits = index.search("default", "chunks", embedder.embed_one("Where was Marie Curie born?"), limit=2)
    assert [h.iri for h in hits][0] == "http://kb/c/1" and hits[0].payload["text"].startswith("Marie Curie")
    index.upsert("default", "chunks", iris[:1], embedder.embed([PASSAGES[iris[0]]]), [{"text": "again"}])
    assert index.count("default", "chunks") == 3  # same IRI, same point
    index.delete("default", "chunks", iris[:2])
    assert index.count("default", "chunks") == 1 and index.count("other", "chunks") == 1
    index.drop("default")
    assert index.count("default", "chunks") == 0 and index.search("default", "chunks", np.ones(384), 3) == []
    assert index.count("other", "chunks") == 1


def test_a_local_index_is_kept_on_disk(tmp_path: Path, embedder: Embedder) -> None:
    index = LocalVectors(embedder.dim, tmp_path / "vectors.sqlite")
    iris = list(PASSAGES)
    index.upsert("default", "chunks", iris, embedder.embed(list(PASSAGES.values())), [{}, {}, {}])
    index.delete("default", "chunks", iris[:1])
    index.close()
    reopened = LocalVectors(embedder.dim, tmp_path / "vectors.sqlite")
    assert reopened.count("default", "chunks") == 2
    hits = reopened.search("default", "chunks", embedder.embed_one("Where was Marie Curie born?"), limit=3)
    assert {h.iri for h in hits} == set(iris[1:])
    reopened.upsert("default", "chunks", iris[:1], embedder.embed([PASSAGES[iris[0]]]), [{"text": "back"}])
    hits = reopened.search("default", "chunks", embedder.embed_one("Where was Marie Curie born?"), limit=1)
    assert hits[0].iri == iris[0] and hits[0].payload == {"text": "back", "iri": iris[0]}
    reopened.close()


def test_a_data_directory_from_before_has_its_local_qdrant_points_moved_in_once(
    tmp_path: Path, embedder: Embedder
) -> None:
    from qdrant_client import QdrantClient, models

    from sparqlrag.config import Settings
    from sparqlrag.services import vector_index
    from sparqlrag.store.vector_index import point_id

    old = QdrantClient(path=str(tmp_path / "qdrant"))  # what qdrant-client's local mode wrote
    old.create_collection("c__chunks", vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE))
    iris = list(PASSAGES)
    vectors = embedder.embed(list(PASSAGES.values()))
    old.upsert(
        "c__chunks",
        [
            models.PointStruct(id=point_id(iri), vector=(2 * vector).tolist(), payload={"iri": iri, "text": text})
            for iri, vector, text in zip(iris, vectors, PASSAGES.values())
        ],
    )
    old.close()
    index = vector_index(Settings(data_dir=tmp_path), embedder.dim)
    assert not (tmp_path / "qdrant").exists() and (tmp_path / "qdrant.migrated").is_dir()
    assert index.count("c", "chunks") == 3 and index.existing("c", "chunks", iris) == set(iris)
    (hit,) = index.search("c", "chunks", embedder.embed_one("Which tower is in Paris?"), 1)
    assert hit.iri == iris[1] and hit.payload["text"] == PASSAGES[iris[1]]
    assert abs(float(np.linalg.norm(index.vectors_of("c", "chunks", iris[:1])[iris[0]])) - 1) < 1e-5  # stored unit
    index.close()
    again = vector_index(Settings(data_dir=tmp_path), embedder.dim)  # nothing left to move
    assert again.count("c", "chunks") == 3
    again.close()


def test_keyword_index_bm25(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "keywords.sqlite")
    index.add("default", list(PASSAGES.items()))
    hits = index.search("default", "Which tower is in Paris?", limit=3)
    assert hits[0].iri == "http://kb/c/2" and {h.iri for h in hits} == {"http://kb/c/1", "http://kb/c/2"}
    assert hits[0].score > hits[1].score
    assert index.search("default", 'flour" OR text:* NEAR(', limit=3)[0].iri == "http://kb/c/3"  # FTS5 syntax is inert
    assert index.search("default", "?!", limit=3) == [] and index.search("empty", "paris", limit=3) == []
    index.add("default", [("http://kb/c/3", "Now about Paris bakeries.")])
    assert index.count("default") == 3
    index.delete("default", ["http://kb/c/1"])
    assert {h.iri for h in index.search("default", "Paris", limit=5)} == {"http://kb/c/2", "http://kb/c/3"}
    with pytest.raises(InvalidName):
        index.search('x"; DROP TABLE', "paris", 3)


def test_an_entity_has_a_label_point_and_a_definition_point_but_is_found_once(
    index: VectorIndex, embedder: Embedder
) -> None:
    iris = ["http://x/curie", "http://x/bohr"]
    index.upsert("c", "entities", iris, embedder.embed(["Marie Curie", "Niels Bohr"]), [{}, {}])
    index.upsert(
        "c", "entities", iris[:1], embedder.embed(["Marie Curie: a physicist and chemist"]), [{}], "definition"
    )
    index.upsert("c", "entities", iris[:1], embedder.embed(["Madame Curie"]), [{}], alias_facet("Madame Curie"))
    assert index.count("c", "entities") == 4
    assert index.existing("c", "entities", iris, "definition") == {"http://x/curie"}
    hits = index.search("c", "entities", embedder.embed_one("chemist"), 2)
    assert [h.iri for h in hits] == ["http://x/curie", "http://x/bohr"] and hits[0].payload["facet"] == "definition"
    index.delete("c", "entities", iris[:1])  # every facet's point, an alias name's too
    assert (
        index.count("c", "entities") == 1
        and [h.iri for h in index.search("c", "entities", embedder.embed_one("x"), 5)] == iris[1:]
    )


def test_search_sees_every_write_after_the_first_search(index: VectorIndex, embedder: Embedder) -> None:
    index.upsert("c", "chunks", ["http://x/a"], embedder.embed(["bread and flour"]), [{}])
    query = embedder.embed_one("a river in Poland")
    assert [h.iri for h in index.search("c", "chunks", query, 5)] == ["http://x/a"]  # loads the matrix
    index.upsert("c", "chunks", ["http://x/b"], embedder.embed(["the Vistula flows through Warsaw"]), [{}])
    assert [h.iri for h in index.search("c", "chunks", query, 5)] == ["http://x/b", "http://x/a"]
    index.delete("c", "chunks", ["http://x/b"])
    assert [h.iri for h in index.search("c", "chunks", query, 5)] == ["http://x/a"]
    index.upsert("c", "chunks", ["http://x/a"], embedder.embed(["Krakow lies on the Vistula in Poland"]), [{"v": 2}])
    (hit,) = index.search("c", "chunks", query, 5)
    assert hit.payload["v"] == 2 and hit.score > 0.3
    stored = index.vectors_of(
        "c", "chunks", ["http://x/a", "http://x/b"]
    )  # from the matrix now: the new vector, no deleted one
    assert (
        list(stored) == ["http://x/a"]
        and float(stored["http://x/a"] @ embedder.embed_one("Krakow lies on the Vistula in Poland")) > 0.99
    )


def test_search_many_answers_each_query_as_search_does(index: VectorIndex, embedder: Embedder) -> None:
    texts = ["bread and flour", "the Vistula flows through Warsaw", "a violin sonata", "Marie Curie studied radium"]
    queries = embedder.embed(["baking", "rivers of Poland", "chamber music"])
    index.upsert("c", "chunks", [f"http://x/{i}" for i in range(4)], embedder.embed(texts), [{}] * 4)
    many = index.search_many("c", "chunks", queries, 2)
    singles = [index.search("c", "chunks", query, 2) for query in queries]
    assert [[(h.iri, round(h.score, 5)) for h in hits] for hits in many] == [
        [(h.iri, round(h.score, 5)) for h in hits] for hits in singles
    ]
    assert [hits[0].iri for hits in many] == ["http://x/0", "http://x/1", "http://x/2"]
    assert index.search_many("nothing", "chunks", queries, 2) == [[], [], []]
    for query in queries:  # a ranking is search's IRIs and scores, payloads unread
        assert index.ranking("c", "chunks", query, 3) == [
            (h.iri, h.score) for h in index.search("c", "chunks", query, 3)
        ]
    index.upsert("c", "entities", ["http://x/e"], embedder.embed(["Warsaw"]), [{}])
    index.upsert("c", "entities", ["http://x/e"], embedder.embed(["Warsaw: a city on the Vistula"]), [{}], "definition")
    assert [iri for iri, _ in index.ranking("c", "entities", queries[1], 5)] == ["http://x/e"]  # once, at its best
    assert index.ranking("nothing", "chunks", queries[0], 2) == []
    # a threshold keeps the hits at or above it: what search finds there, nothing below
    close = index.search_many("c", "chunks", queries, 4, threshold=0.3)
    assert [[h.iri for h in hits] for hits in close] == [
        [h.iri for h in hits if h.score >= 0.3] for hits in index.search_many("c", "chunks", queries, 4)
    ]
    assert any(len(hits) < 4 for hits in close) and all(h.score >= 0.3 for hits in close for h in hits)


def test_queries_are_scored_a_few_at_a_time_with_the_same_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many queries at once (a batch's entity names) scored in slices bounded by SCORE_BYTES:
    all at once, their scores against a big collection took hundreds of MB for a moment."""
    rng = np.random.default_rng(7)
    rows, queries = _unit_rows(rng, 500), _unit_rows(rng, 40)
    index = LocalVectors(384, tmp_path / "vectors.sqlite")
    try:
        index.upsert("c", "entities", [f"http://x/{i}" for i in range(500)], rows, [{}] * 500)
        whole = index.search_many("c", "entities", queries, 5)
        monkeypatch.setattr(local_vectors, "SCORE_BYTES", 4 * 500 * 3)  # three queries a slice
        sliced = index.search_many("c", "entities", queries, 5)
    finally:
        index.close()
    assert [[(h.iri, round(h.score, 5)) for h in hits] for hits in sliced] == [
        [(h.iri, round(h.score, 5)) for h in hits]
        for hits in whole  # (BLAS may round the last bit differently)
    ]
    assert len(whole) == 40 and all(len(hits) == 5 for hits in whole)


def _unit_rows(rng: np.random.Generator, count: int) -> np.ndarray:
    rows = rng.standard_normal((count, 384)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_a_shortlist_holds_each_rows_nearest_and_follows_rewrites_and_removals() -> None:
    rng = np.random.default_rng(7)
    rows = _unit_rows(rng, 3000)
    shortlist = Shortlist(rows)
    near = rows[:200] + 0.05 * _unit_rows(rng, 200)
    assert all(row in found for row, found in enumerate(shortlist.candidates(near, 5)))
    moved = _unit_rows(rng, 1)
    shortlist.remove(np.array([3]))
    shortlist.add(np.array([3]), moved)  # row 3 rewritten: found at its new place, not its old one
    assert 3 in shortlist.candidates(moved, 5)[0] and 3 not in shortlist.candidates(rows[3:4], 5)[0]
    shortlist.remove(np.array([4]))
    assert 4 not in shortlist.candidates(rows[4:5], 5)[0]


def test_a_big_local_collection_is_searched_through_its_shortlist_and_stays_current(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    rows = _unit_rows(rng, 2500)
    iris = [f"http://x/{i}" for i in range(len(rows))]
    exact = LocalVectors(384, tmp_path / "exact.sqlite")
    shortlisted = LocalVectors(384, tmp_path / "shortlisted.sqlite", shortlist_rows=2000)
    for index in (exact, shortlisted):
        index.upsert("c", "facts", iris, rows, [{}] * len(rows))
    queries = rows[:100] + 0.05 * _unit_rows(rng, 100)
    found, truth = shortlisted.search_many("c", "facts", queries, 5), exact.search_many("c", "facts", queries, 5)
    assert [[h.iri for h in hits] for hits in found] == [[h.iri for h in hits] for hits in truth]
    assert [hits[0].iri for hits in found] == iris[:100]
    assert all(abs(a.score - b.score) < 1e-4 for hits, best in zip(found, truth) for a, b in zip(hits, best))
    matrix = shortlisted._matrices["c__facts"]
    assert matrix.shortlist is not None and len(matrix.shortlist) == 2500  # the path under test was taken
    fresh = _unit_rows(rng, 1)  # written after the shortlist was built: one new point, one rewritten
    shortlisted.upsert("c", "facts", ["http://x/new", "http://x/0"], np.vstack([fresh, fresh]), [{}, {"v": 2}])
    assert {h.iri for h in shortlisted.search("c", "facts", fresh[0], 2)} == {"http://x/new", "http://x/0"}
    assert "http://x/0" not in {h.iri for h in shortlisted.search("c", "facts", rows[0], 5)}  # its old vector is gone
    shortlisted.delete("c", "facts", ["http://x/1"])
    assert "http://x/1" not in {h.iri for h in shortlisted.search("c", "facts", rows[1], 5)}
    assert len(matrix.shortlist) == 2500  # one added, one rewritten in place, one removed
    exact.close()
    shortlisted.close()
