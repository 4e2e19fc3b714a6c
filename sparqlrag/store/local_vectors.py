"""Vector indexes in the data directory: one SQLite file, searched as matrices in memory.

Every point is a row of `points`: its index's name, its id, IRI, payload (JSON) and unit vector
(float32 bytes). An index is searched as one matrix of its vectors, read from the file on its
first search and kept up to date by every write; payloads stay on disk and are read for the hits
alone. So an index held in memory costs its vectors (1.5 KB a point at 384 dimensions) and 9
bytes of bookkeeping a point. (qdrant-client's local mode, used before, built every vector out
of Python floats when it opened its files: 12 KB a point; bench/RESULTS.md.) From
SHORTLIST_ROWS points on, a search scores exactly only what a float16 first pass shortlists
(shortlist.py).

A point's `seq` stays while the point lives and is never reused (AUTOINCREMENT), so a matrix
keeps its rows in `seq` order: a rewrite overwrites its row in place, a new point (whose `seq` is
above every other) goes at the end, and a deleted point's row is masked until the next load.
Commits go to SQLite's write-ahead log without a sync (synchronous=NORMAL): a killed process
loses nothing, a power cut may lose the last points written (`sparqlrag reindex` restores them
from the store, the system of record).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from qdrant_client import QdrantClient

from sparqlrag.store.shortlist import SHORTLIST_ROWS, Shortlist
from sparqlrag.store.vector_index import (
    KINDS,
    Facet,
    Hit,
    Kind,
    Payload,
    VectorIndex,
    best_per_iri,
    point_id,
    stamped,
    unit,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS points (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  id TEXT NOT NULL,
  iri TEXT NOT NULL,
  payload TEXT NOT NULL,
  vector BLOB NOT NULL,
  UNIQUE (name, id));
CREATE INDEX IF NOT EXISTS points_in_order ON points (name, seq);
CREATE INDEX IF NOT EXISTS points_of_iri ON points (name, iri);
"""
WRITE = """INSERT INTO points (name, id, iri, payload, vector) VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (name, id) DO UPDATE SET iri = excluded.iri, payload = excluded.payload, vector = excluded.vector
  RETURNING seq"""
WITHIN = "SELECT seq, iri FROM points WHERE name = ? AND iri IN (SELECT value FROM json_each(?))"
PARAMETERS = 500  # ids in one `IN (...)`
PAGE = 10_000  # rows read at a time when loading a matrix
GROWTH = 1.25  # a full matrix grows by a quarter: appends copy it rarely, and it wastes little
SCORE_BYTES = 32 * 2**20  # the scores of the queries searched at once (see _nearest)


def _pieces(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), PARAMETERS):
        yield items[start : start + PARAMETERS]


def _marks(items: Sequence[object]) -> str:
    return ",".join("?" * len(items))


@dataclass
class _Matrix:
    """An index's unit vectors, row by row in `seq` order. Rows are only added at the end
    (into a new array when full), so a reader holding the arrays of a moment keeps a
    consistent view of its rows while the index is written."""

    vectors: np.ndarray  # (capacity, dim); the first `size` rows are points
    seqs: np.ndarray  # (capacity,) int64: each row's point, ascending
    dead: np.ndarray  # (capacity,) bool: rows of deleted points
    size: int
    shortlist: Shortlist | None = None  # a big matrix's float16 first pass (shortlist.py)

    @classmethod
    def of(cls, seqs: np.ndarray, vectors: np.ndarray) -> _Matrix:
        return cls(vectors, seqs, np.zeros(len(seqs), dtype=bool), len(seqs))

    def live(self) -> int:
        return self.size - int(self.dead[: self.size].sum())

    def rows_of(self, seqs: np.ndarray) -> np.ndarray:
        """The rows of points the matrix holds."""
        return np.searchsorted(self.seqs[: self.size], seqs)

    def written(self, seqs: np.ndarray, vectors: np.ndarray) -> None:
        """Points just written: new ones (above every seq held) appended, others overwritten."""
        last = self.seqs[self.size - 1] if self.size else -1
        new = seqs > last
        if (~new).any():
            rows = self.rows_of(seqs[~new])
            self.vectors[rows] = vectors[~new]
            if self.shortlist is not None:
                self.shortlist.remove(rows)
                self.shortlist.add(rows, vectors[~new])
        if new.any():
            self._append(seqs[new], vectors[new])

    def _append(self, seqs: np.ndarray, vectors: np.ndarray) -> None:
        end = self.size + len(seqs)
        if end > len(self.seqs):
            capacity = max(end, int(len(self.seqs) * GROWTH), 1024)
            grown = _Matrix(
                np.zeros((capacity, self.vectors.shape[1]), dtype=np.float32),
                np.zeros(capacity, dtype=np.int64),
                np.zeros(capacity, dtype=bool),
                self.size,
            )
            grown.vectors[: self.size] = self.vectors[: self.size]
            grown.seqs[: self.size] = self.seqs[: self.size]
            grown.dead[: self.size] = self.dead[: self.size]
            self.vectors, self.seqs, self.dead = grown.vectors, grown.seqs, grown.dead
        self.vectors[self.size : end], self.seqs[self.size : end] = vectors, seqs
        if self.shortlist is not None:
            self.shortlist.add(np.arange(self.size, end), vectors)
        self.size = end

    def remove(self, seqs: np.ndarray) -> None:
        rows = self.rows_of(seqs)
        self.dead[rows] = True
        if self.shortlist is not None:
            self.shortlist.remove(rows)

    def shortlisted(self, queries: np.ndarray, limit: int, shortlist_rows: int) -> np.ndarray | None:
        """Candidate rows per query when the matrix is big enough to have a shortlist (built on
        first need), else None: read it all."""
        if self.live() < shortlist_rows:
            return None
        if self.shortlist is None:
            self.shortlist = Shortlist(self.vectors[: self.size])
            self.shortlist.remove(np.flatnonzero(self.dead[: self.size]))
        return self.shortlist.candidates(queries, limit)  # a query's scale does not change its order


def _nearest(
    table: np.ndarray, dead: np.ndarray, queries: np.ndarray, limit: int, threshold: float
) -> list[list[tuple[float, int]]]:
    """Each query's (score, row) pairs at or above `threshold` over the whole matrix, best first. Queries are scored a
    few at a time, so that their scores (rows x queries) stay within SCORE_BYTES: all at once,
    a batch's entity names against 80,000 entities took 600 MB for a moment."""
    out = []
    step = max(1, SCORE_BYTES // (4 * max(1, len(table))))
    for start in range(0, len(queries), step):
        scores = table @ unit(queries[start : start + step]).T
        scores[dead] = -np.inf
        for column in scores.T:
            top = np.argpartition(-column, min(limit, len(column) - 1))[:limit]
            top = top[np.argsort(-column[top])]
            top = top[column[top] >= threshold]
            out.append([(float(column[row]), int(row)) for row in top if not dead[row]])
    return out


def _rescored(
    table: np.ndarray, dead: np.ndarray, candidates: np.ndarray, queries: np.ndarray, limit: int, threshold: float
) -> list[list[tuple[float, int]]]:
    """Each query's shortlisted rows (-1: none) scored exactly: (score, row) pairs at or above
    `threshold`, best first."""
    out = []
    for rows, query in zip(candidates, unit(queries)):
        rows = rows[(rows >= 0) & (rows < len(table))]
        rows = rows[~dead[rows]]
        scores = table[rows] @ query
        order = np.argsort(-scores)[:limit]
        order = order[scores[order] >= threshold]
        out.append([(float(scores[i]), int(rows[i])) for i in order])
    return out


class LocalVectors(VectorIndex):
    def __init__(self, dim: int, path: Path, *, shortlist_rows: int = SHORTLIST_ROWS) -> None:
        self.dim, self.shortlist_rows = dim, shortlist_rows
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()
        self._matrices: dict[str, _Matrix] = {}

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def upsert(
        self,
        collection: str,
        kind: Kind,
        iris: Sequence[str],
        vectors: np.ndarray,
        payloads: Sequence[Payload],
        facet: Facet = "",
    ) -> None:
        self.checked(iris, vectors, payloads)
        last = {iri: index for index, iri in enumerate(iris)}  # an IRI given twice: its last point
        kept = list(last.values())
        rows = [(point_id(iris[i], facet), iris[i], stamped(iris[i], payloads[i], facet)) for i in kept]
        with self._lock:
            self._write(self.name(collection, kind), rows, unit(np.asarray(vectors)[kept]))

    def _write(self, name: str, rows: list[tuple[str, str, Payload]], vectors: np.ndarray) -> None:
        """Points (id, IRI, payload) with their unit vectors, in one transaction; then the
        matrix, if loaded. The caller holds the lock."""
        with self._db:
            seqs = [
                self._db.execute(WRITE, (name, point, iri, json.dumps(payload), vector.tobytes())).fetchone()[0]
                for (point, iri, payload), vector in zip(rows, vectors)
            ]
        if (matrix := self._matrices.get(name)) is not None:
            matrix.written(np.array(seqs, dtype=np.int64), vectors)

    def search_many(
        self, collection: str, kind: Kind, vectors: np.ndarray, limit: int, threshold: float = -np.inf
    ) -> list[list[Hit]]:
        """All queries in one pass over the matrix, computed outside the lock on the arrays of
        the moment (see _Matrix); hits deleted meanwhile are dropped when their payloads are read."""
        ranked, seqs = self._nearest_rows(collection, kind, vectors, self.fetched(kind, limit), threshold)
        with self._lock:
            payloads = self._payloads(sorted({int(seqs[row]) for hits in ranked for _, row in hits}))
        found = [[(score, payloads[s]) for score, row in hits if (s := int(seqs[row])) in payloads] for hits in ranked]
        return best_per_iri(found, limit)

    def ranking(
        self, collection: str, kind: Kind, vector: np.ndarray, limit: int, within: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """search's IRIs and scores, reading no payload: a long ranking costs its IRIs alone."""
        if within is not None:
            return self._ranking_within(self.name(collection, kind), vector, limit, within)
        (hits,), seqs = self._nearest_rows(collection, kind, vector[None, :], self.fetched(kind, limit), -np.inf)
        wanted = sorted({int(seqs[row]) for _, row in hits})
        iris: dict[int, str] = {}
        with self._lock:
            for start in range(0, len(wanted), PARAMETERS):
                part = wanted[start : start + PARAMETERS]
                query = f"SELECT seq, iri FROM points WHERE seq IN ({_marks(part)})"
                iris |= dict(self._db.execute(query, part).fetchall())
        best: dict[str, float] = {}
        for score, row in hits:  # best first: an IRI's first point is its best facet
            if (seq := int(seqs[row])) in iris:
                best.setdefault(iris[seq], score)
        return list(best.items())[:limit]

    def _ranking_within(
        self, name: str, vector: np.ndarray, limit: int, within: Collection[str]
    ) -> list[tuple[str, float]]:
        """The nearest of `within`'s points, each scored exactly: their rows found through the
        file's (name, iri) index (the IRIs passed as one JSON parameter, however many)."""
        with self._lock:
            matrix = self._loaded(name)
            found = self._db.execute(WITHIN, (name, json.dumps(list(within)))).fetchall()
            seqs = np.array([seq for seq, _ in found], dtype=np.int64)
            rows = np.minimum(matrix.rows_of(seqs), max(matrix.size - 1, 0))
            held = (matrix.seqs[rows] == seqs) & ~matrix.dead[rows] if matrix.size else np.zeros(len(seqs), bool)
            table = matrix.vectors[rows[held]]  # (a copy: the rows of this moment)
        iris = [iri for (_, iri), kept in zip(found, held) if kept]
        scores = table @ unit(vector)
        best: dict[str, float] = {}
        for row in np.argsort(-scores):  # best first: an IRI's first point is its best facet
            best.setdefault(iris[row], float(scores[row]))
            if len(best) == limit:
                break
        return list(best.items())

    def _nearest_rows(
        self, collection: str, kind: Kind, vectors: np.ndarray, fetch: int, threshold: float
    ) -> tuple[list[list[tuple[float, int]]], np.ndarray]:
        """Each query's `fetch` nearest rows (score, row) at or above `threshold`, and the rows' seqs."""
        with self._lock:
            matrix = self._loaded(self.name(collection, kind))
            if not matrix.live():
                return [[] for _ in vectors], matrix.seqs[:0]
            table, seqs, dead = matrix.vectors[: matrix.size], matrix.seqs[: matrix.size], matrix.dead[: matrix.size]
            dead = dead.copy()
            candidates = matrix.shortlisted(vectors, fetch, self.shortlist_rows)
        if candidates is None:
            return _nearest(table, dead, vectors, fetch, threshold), seqs
        return _rescored(table, dead, candidates, vectors, fetch, threshold), seqs

    def _payloads(self, seqs: list[int]) -> dict[int, Payload]:
        out: dict[int, Payload] = {}
        for start in range(0, len(seqs), PARAMETERS):
            part = seqs[start : start + PARAMETERS]
            query = f"SELECT seq, payload FROM points WHERE seq IN ({_marks(part)})"
            out |= {seq: json.loads(payload) for seq, payload in self._db.execute(query, part)}
        return out

    def _loaded(self, name: str) -> _Matrix:
        """The index's matrix, read from the file the first time (a page of rows at a time:
        no vector is ever a list of Python floats). The caller holds the lock."""
        matrix = self._matrices.get(name)
        if matrix is None:
            size = self._db.execute("SELECT count(*) FROM points WHERE name = ?", (name,)).fetchone()[0]
            seqs, vectors = np.zeros(size, dtype=np.int64), np.zeros((size, self.dim), dtype=np.float32)
            cursor = self._db.execute("SELECT seq, vector FROM points WHERE name = ? ORDER BY seq", (name,))
            start = 0
            while page := cursor.fetchmany(PAGE):
                end = start + len(page)
                seqs[start:end] = [seq for seq, _ in page]
                vectors[start:end] = np.frombuffer(b"".join(v for _, v in page), dtype=np.float32).reshape(-1, self.dim)
                start = end
            matrix = self._matrices[name] = _Matrix.of(seqs, vectors)
        return matrix

    def _selected(self, name: str, columns: str, iris: Sequence[str], facet: Facet) -> list[tuple[str, bytes]]:
        ids = [point_id(iri, facet) for iri in iris]
        rows = []
        for part in _pieces(ids):
            query = f"SELECT {columns} FROM points WHERE name = ? AND id IN ({_marks(part)})"
            rows += self._db.execute(query, [name, *part]).fetchall()
        return rows

    def existing(self, collection: str, kind: Kind, iris: Sequence[str], facet: Facet = "") -> set[str]:
        with self._lock:
            return {row[0] for row in self._selected(self.name(collection, kind), "iri", iris, facet)}

    def vectors_of(self, collection: str, kind: Kind, iris: Sequence[str], facet: Facet = "") -> dict[str, np.ndarray]:
        with self._lock:
            rows = self._selected(self.name(collection, kind), "iri, vector", iris, facet)
        return {iri: np.frombuffer(vector, dtype=np.float32).copy() for iri, vector in rows}

    def delete(self, collection: str, kind: Kind, iris: Sequence[str]) -> None:
        name = self.name(collection, kind)
        with self._lock:
            with self._db:
                seqs = []
                for part in _pieces(iris):
                    query = f"DELETE FROM points WHERE name = ? AND iri IN ({_marks(part)}) RETURNING seq"
                    seqs += [row[0] for row in self._db.execute(query, [name, *part])]
            if seqs and (matrix := self._matrices.get(name)) is not None:
                matrix.remove(np.array(sorted(seqs), dtype=np.int64))

    def points(self, collection: str, kind: Kind) -> tuple[np.ndarray, list[Payload]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT vector, payload FROM points WHERE name = ? ORDER BY seq", (self.name(collection, kind),)
            ).fetchall()
        vectors = np.frombuffer(b"".join(vector for vector, _ in rows), dtype=np.float32).reshape(-1, self.dim)
        return vectors.copy(), [json.loads(payload) for _, payload in rows]

    def iris(self, collection: str, kind: Kind) -> set[str]:
        with self._lock:
            query = "SELECT DISTINCT iri FROM points WHERE name = ?"
            return {row[0] for row in self._db.execute(query, (self.name(collection, kind),))}

    def count(self, collection: str, kind: Kind) -> int:
        with self._lock:
            query = "SELECT count(*) FROM points WHERE name = ?"
            return int(self._db.execute(query, (self.name(collection, kind),)).fetchone()[0])

    def drop(self, collection: str) -> None:
        names = [self.name(collection, kind) for kind in KINDS]
        with self._lock:
            with self._db:
                self._db.execute(f"DELETE FROM points WHERE name IN ({_marks(names)})", names)
            for name in names:
                self._matrices.pop(name, None)

    def adopt_qdrant_folder(self, folder: Path) -> int:
        """Moves the points qdrant-client's local mode (this index's format before) kept in
        `folder` into this index, then renames the folder `<name>.migrated` (delete it once
        satisfied). Opening that folder takes ~12 KB a point, once. Returns the points moved."""
        client = QdrantClient(path=str(folder))
        moved = 0
        try:
            for collection in client.get_collections().collections:
                offset = None
                while True:
                    found, offset = client.scroll(
                        collection.name, limit=PAGE, offset=offset, with_payload=True, with_vectors=True
                    )
                    rows = [(str(p.id), (p.payload or {})["iri"], p.payload or {}) for p in found]
                    vectors = np.asarray([p.vector for p in found], dtype=np.float32).reshape(-1, self.dim)
                    with self._lock:
                        self._write(collection.name, rows, unit(vectors))
                    moved += len(rows)
                    if offset is None:
                        break
        finally:
            client.close()
        folder.rename(folder.with_name(folder.name + ".migrated"))
        return moved
