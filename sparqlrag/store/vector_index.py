"""Vector indexes in Qdrant: local mode on disk by default, a Qdrant server when a URL is set.

Each knowledge collection has three Qdrant collections: `{collection}__chunks`,
`{collection}__entities` and `{collection}__facts` (the fact index: one point per walked fact,
named by its reifier). A point's id is derived from the IRI it indexes and its facet (UUID
v5), so re-indexing the same chunk or entity overwrites it and deleting needs only the IRIs
(which the store knows); the payload carries the IRI and whatever the caller adds (text, label).
An IRI may have a point per facet: an entity has one for its label, and one for its label with
its definition when it has one; a search returns each IRI once, at its best score.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from qdrant_client import QdrantClient, models

from sparqlrag.store.shortlist import SHORTLIST_ROWS, Shortlist

Kind = Literal["chunks", "entities", "facts"]
KINDS: tuple[Kind, ...] = ("chunks", "entities", "facts")
Facet = Literal["", "definition"]
FACETS: tuple[Facet, ...] = ("", "definition")
BATCH = 256
Payload = dict[str, Any]  # what a point carries beside its vector: its IRI, label, text, ...


@dataclass(frozen=True)
class Hit:
    iri: str
    score: float
    payload: Payload


def point_id(iri: str, facet: Facet = "") -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{iri}#{facet}" if facet else iri))


def unit(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero): cosine becomes a dot product."""
    array = np.asarray(vectors, dtype=np.float32)
    scaled: np.ndarray = array / np.maximum(np.linalg.norm(array, axis=-1, keepdims=True), 1e-12)
    return scaled


def _nearest(
    table: np.ndarray, payloads: list[Payload | None], removed: list[int], queries: np.ndarray, limit: int
) -> list[list[tuple[float, Payload]]]:
    """Cosine search of each query over a normalised matrix: (score, payload) pairs, best first."""
    if not len(payloads):
        return [[] for _ in queries]
    scores = table[: len(payloads)] @ unit(queries).T
    if removed:
        scores[removed] = -np.inf
    out = []
    for column in scores.T:
        top = np.argpartition(-column, min(limit, len(column) - 1))[:limit]
        top = top[np.argsort(-column[top])]
        out.append([(float(column[i]), payload) for i in top if (payload := payloads[i]) is not None])
    return out


def _rescored(
    table: np.ndarray, payloads: list[Payload | None], candidates: np.ndarray, queries: np.ndarray, limit: int
) -> list[list[tuple[float, Payload]]]:
    """Each query's shortlisted rows (-1: none) scored exactly: (score, payload) pairs, best first."""
    out = []
    for rows, query in zip(candidates, unit(queries)):
        rows = rows[rows >= 0]
        scores = table[rows] @ query
        order = np.argsort(-scores)[:limit]
        out.append([(float(scores[i]), payload) for i in order if (payload := payloads[rows[i]]) is not None])
    return out


@dataclass
class _Matrix:
    """A local collection's vectors as one normalised matrix, with each row's payload (None
    once deleted); kept up to date by writes, so a search after a write does not reload it."""

    vectors: np.ndarray
    payloads: list[Payload | None]
    rows: dict[str, int]  # point id -> row
    removed: set[int] = field(default_factory=set)  # rows of deleted points, never returned
    shortlist: Shortlist | None = None  # a big matrix's float16 first pass (shortlist.py)

    def put(self, ids: list[str], vectors: np.ndarray, payloads: list[Payload]) -> None:
        fresh: list[tuple[np.ndarray, Payload]] = []
        rewritten: list[int] = []
        written: list[int] = []
        normalised = unit(vectors)
        for point, vector, payload in zip(ids, normalised, payloads):
            if point in self.rows:
                self.vectors[self.rows[point]], self.payloads[self.rows[point]] = vector, payload
                rewritten.append(self.rows[point])
            else:
                self.rows[point] = len(self.payloads) + len(fresh)
                fresh.append((vector, payload))
            written.append(self.rows[point])
        if fresh:
            self.vectors = np.vstack([self.vectors, np.stack([vector for vector, _ in fresh])])
            self.payloads += [payload for _, payload in fresh]
        if self.shortlist is not None:
            self.shortlist.remove(np.array(rewritten))
            self.shortlist.add(np.array(written), normalised)

    def remove(self, ids: list[str]) -> None:
        gone = [row for point in ids if (row := self.rows.pop(point, None)) is not None]
        for row in gone:
            self.payloads[row] = None
            self.removed.add(row)
        if self.shortlist is not None:
            self.shortlist.remove(np.array(gone))

    def shortlisted(self, queries: np.ndarray, limit: int, shortlist_rows: int) -> np.ndarray | None:
        """Candidate rows per query when the matrix is big enough to have a shortlist (built on
        first need), else None: read it all."""
        if len(self.rows) < shortlist_rows:
            return None
        if self.shortlist is None:
            self.shortlist = Shortlist(self.vectors[: len(self.payloads)])
            self.shortlist.remove(np.array(sorted(self.removed)))
        return self.shortlist.candidates(queries, limit)  # a query's scale does not change its order


class VectorIndex:
    """Thread-safe wrapper: qdrant-client's local mode is not safe to call from many threads.

    In local mode, searches use a matrix of the collection's vectors kept beside Qdrant (loaded
    on the first search, then kept up to date by every write): qdrant-client's local search re-normalises every stored
    vector on every query (~50 ms at 40k points; ~3 ms as one matrix product). A Qdrant server
    searches itself."""

    def __init__(
        self,
        dim: int,
        *,
        path: Path | None = None,
        url: str | None = None,
        api_key: str | None = None,
        shortlist_rows: int = SHORTLIST_ROWS,
    ) -> None:
        self.dim, self.shortlist_rows = dim, shortlist_rows
        if url:
            self._client = QdrantClient(url=url, api_key=api_key)
        elif path is not None:
            path.mkdir(parents=True, exist_ok=True)
            self._client = QdrantClient(path=str(path))
        else:
            self._client = QdrantClient(location=":memory:")
        self._lock = threading.Lock()
        self._known: set[str] = set()
        self._local = not url
        self._matrices: dict[str, _Matrix] = {}

    def close(self) -> None:
        with self._lock:
            self._client.close()

    @staticmethod
    def name(collection: str, kind: Kind) -> str:
        return f"{collection}__{kind}"

    def _ensure(self, name: str) -> None:
        if name in self._known:
            return
        if not self._client.collection_exists(name):
            self._client.create_collection(
                name, vectors_config=models.VectorParams(size=self.dim, distance=models.Distance.COSINE)
            )
        if self._local:
            self._cheap_commits(name)
        self._known.add(name)

    def _cheap_commits(self, name: str) -> None:
        """qdrant-client's local mode commits each point to its SQLite file on its own: with
        SQLite's default journal that is a sync to disk per point (60% of a knowledge core's
        import). In WAL mode with synchronous=NORMAL a commit does not sync: a crash of the process
        loses nothing and the file stays consistent; a power cut may lose the last points written
        before it (re-index them with `sparqlrag reingest`/`index`). Reaches into qdrant-client's
        internals: when they change, this does nothing and upserts are only slower."""
        collection = getattr(getattr(self._client, "_client", None), "collections", {}).get(name)
        connection = getattr(getattr(collection, "storage", None), "storage", None)
        if connection is not None:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")

    def upsert(
        self,
        collection: str,
        kind: Kind,
        iris: Sequence[str],
        vectors: np.ndarray,
        payloads: Sequence[Payload],
        facet: Facet = "",
    ) -> None:
        """Write points in batches; each payload gets its IRI as "iri" (and its facet, if any)."""
        if len(iris) != len(vectors) or len(iris) != len(payloads):
            raise ValueError("iris, vectors and payloads must have the same length")
        name = self.name(collection, kind)
        with self._lock:
            self._ensure(name)
            for start in range(0, len(iris), BATCH):
                points = [
                    models.PointStruct(
                        id=point_id(iri, facet),
                        vector=vector.tolist(),
                        payload={**payload, "iri": iri} | ({"facet": facet} if facet else {}),
                    )
                    for iri, vector, payload in zip(
                        iris[start : start + BATCH], vectors[start : start + BATCH], payloads[start : start + BATCH]
                    )
                ]
                self._client.upsert(name, points=points, wait=True)
                if name in self._matrices:
                    self._matrices[name].put(
                        [str(p.id) for p in points],
                        np.array([p.vector for p in points]),
                        [p.payload or {} for p in points],
                    )

    def search(self, collection: str, kind: Kind, vector: np.ndarray, limit: int) -> list[Hit]:
        return self.search_many(collection, kind, vector[None, :], limit)[0]

    def search_many(self, collection: str, kind: Kind, vectors: np.ndarray, limit: int) -> list[list[Hit]]:
        """The `limit` nearest IRIs to each row of `vectors`; a local collection answers all
        rows with one pass over its matrix (computed outside the lock: a write replaces the
        matrix rather than resizing it in place); from shortlist_rows points on, it scores
        exactly only the rows its float16 copy shortlists (shortlist.py; under the lock, as
        faiss may not be searched while written)."""
        name = self.name(collection, kind)
        fetch = limit * len(FACETS) if kind == "entities" else limit
        shortlisted: np.ndarray | None = None
        with self._lock:
            if name not in self._known and not self._client.collection_exists(name):
                return [[] for _ in vectors]
            self._known.add(name)
            if self._local:
                matrix = self._loaded(name)
                table, payloads, removed = matrix.vectors, matrix.payloads, list(matrix.removed)
                shortlisted = matrix.shortlisted(vectors, fetch, self.shortlist_rows)
            else:
                requests = [
                    models.QueryRequest(query=vector.tolist(), limit=fetch, with_payload=True) for vector in vectors
                ]
                found = [
                    response.points for response in self._client.query_batch_points(name, requests)
                ]  # one round trip
        if self._local:
            if shortlisted is None:
                ranked = _nearest(table, payloads, removed, vectors, fetch)
            else:
                ranked = _rescored(table, payloads, shortlisted, vectors, fetch)
        else:
            ranked = [[(float(p.score), p.payload or {}) for p in points] for points in found]
        out = []
        for hits in ranked:
            best: dict[str, Hit] = {}
            for score, payload in hits:  # best first: the first point of an IRI is its best
                best.setdefault(payload["iri"], Hit(payload["iri"], score, payload))
            out.append(list(best.values())[:limit])
        return out

    def _loaded(self, name: str) -> _Matrix:
        """The local collection's matrix, loaded from Qdrant the first time. The caller holds the lock."""
        matrix = self._matrices.get(name)
        if matrix is None:
            ids, vectors, payloads = self._scroll(name)
            rows = {point: row for row, point in enumerate(ids)}
            matrix = self._matrices[name] = _Matrix(unit(vectors), list[Payload | None](payloads), rows)
        return matrix

    def existing(self, collection: str, kind: Kind, iris: Sequence[str], facet: Facet = "") -> set[str]:
        """Which of `iris` have a point (of `facet`) already."""
        name = self.name(collection, kind)
        with self._lock:
            if not iris or not self._client.collection_exists(name):
                return set()
            ids = [point_id(i, facet) for i in iris]
            points = self._client.retrieve(name, ids=ids, with_payload=True, with_vectors=False)
        return {(p.payload or {})["iri"] for p in points}

    def vectors_of(self, collection: str, kind: Kind, iris: Sequence[str], facet: Facet = "") -> dict[str, np.ndarray]:
        """The stored vectors (of `facet`) of those `iris` that have one."""
        name = self.name(collection, kind)
        with self._lock:
            if (matrix := self._matrices.get(name)) is not None:  # a searched local collection: rows, not points
                found = [(iri, row) for iri in iris if (row := matrix.rows.get(point_id(iri, facet))) is not None]
                return {iri: matrix.vectors[row] for iri, row in found}
            if not iris or not self._client.collection_exists(name):
                return {}
            points = self._client.retrieve(
                name, ids=[point_id(i, facet) for i in iris], with_payload=True, with_vectors=True
            )
        return {(p.payload or {})["iri"]: np.asarray(p.vector, dtype=np.float32) for p in points}

    def delete(self, collection: str, kind: Kind, iris: Sequence[str]) -> None:
        name = self.name(collection, kind)
        with self._lock:
            if iris and self._client.collection_exists(name):
                ids = [point_id(i, facet) for i in iris for facet in FACETS]
                self._client.delete(
                    name, points_selector=models.PointIdsList(points=list[models.ExtendedPointId](ids)), wait=True
                )
                if name in self._matrices:
                    self._matrices[name].remove(ids)

    def points(self, collection: str, kind: Kind) -> tuple[np.ndarray, list[Payload]]:
        """Every point of a collection's index: its vectors as one matrix, and their payloads
        (each with its "iri", and "facet" when it has one). What a knowledge core carries."""
        name = self.name(collection, kind)
        with self._lock:
            if not self._client.collection_exists(name):
                return np.zeros((0, self.dim), dtype=np.float32), []
            _, vectors, payloads = self._scroll(name)
        return vectors, payloads

    def _scroll(self, name: str) -> tuple[list[str], np.ndarray, list[Payload]]:
        """Every point of an existing Qdrant collection: ids, vectors (one matrix), payloads.
        The caller holds the lock."""
        ids: list[str] = []
        # each page an array at once: 1M vectors as Python floats take ~10 GB
        pages = [np.zeros((0, self.dim), dtype=np.float32)]
        payloads: list[Payload] = []
        offset = None
        while True:
            found, offset = self._client.scroll(name, limit=10_000, offset=offset, with_payload=True, with_vectors=True)
            ids += [str(p.id) for p in found]
            pages.append(np.asarray([p.vector for p in found], dtype=np.float32).reshape(len(found), self.dim))
            payloads += [p.payload or {} for p in found]
            if offset is None:
                return ids, np.vstack(pages), payloads

    def count(self, collection: str, kind: Kind) -> int:
        name = self.name(collection, kind)
        with self._lock:
            return self._client.count(name).count if self._client.collection_exists(name) else 0

    def drop(self, collection: str) -> None:
        with self._lock:
            for kind in KINDS:
                name = self.name(collection, kind)
                if self._client.collection_exists(name):
                    self._client.delete_collection(name)
                self._known.discard(name)
                self._matrices.pop(name, None)
