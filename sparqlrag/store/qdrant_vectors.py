"""Vector indexes on a Qdrant server (`qdrant_url`): each index is a Qdrant collection of that
name, with cosine distance; Qdrant searches, stores and persists them itself."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Collection, Sequence

import numpy as np
from qdrant_client import QdrantClient, models

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
)

BATCH = 256  # points a request
PAGE = 10_000  # points a page when reading a whole index
DELETE_BATCH = 1_000  # IRIs a delete request matches


class QdrantVectors(VectorIndex):
    """`location=":memory:"` runs qdrant-client's in-process stand-in for a server (tests)."""

    def __init__(self, dim: int, *, url: str | None = None, api_key: str | None = None, location: str | None = None):
        self.dim = dim
        self._client = QdrantClient(url=url, api_key=api_key) if url else QdrantClient(location=location)
        self._lock = threading.Lock()  # qdrant-client's in-process mode is not safe from many threads
        self._known: set[str] = set()

    def close(self) -> None:
        with self._lock:
            self._client.close()

    def _exists(self, name: str) -> bool:
        if name not in self._known and self._client.collection_exists(name):
            self._known.add(name)
        return name in self._known

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
        name = self.name(collection, kind)
        with self._lock:
            if not self._exists(name):
                self._client.create_collection(
                    name, vectors_config=models.VectorParams(size=self.dim, distance=models.Distance.COSINE)
                )
                with warnings.catch_warnings(action="ignore", category=UserWarning):  # in-process Qdrant: no effect
                    # `delete` finds every facet's point by its IRI: indexed on a server, not scanned
                    self._client.create_payload_index(name, "iri", models.PayloadSchemaType.KEYWORD)
                self._known.add(name)
            for start in range(0, len(iris), BATCH):
                points = [
                    models.PointStruct(id=point_id(iri, facet), vector=vector.tolist(), payload=stamped(iri, p, facet))
                    for iri, vector, p in zip(
                        iris[start : start + BATCH], vectors[start : start + BATCH], payloads[start : start + BATCH]
                    )
                ]
                self._client.upsert(name, points=points, wait=True)

    def search_many(
        self, collection: str, kind: Kind, vectors: np.ndarray, limit: int, threshold: float = -np.inf
    ) -> list[list[Hit]]:
        """All queries in one request."""
        name = self.name(collection, kind)
        with self._lock:
            if not self._exists(name):
                return [[] for _ in vectors]
            requests = [
                models.QueryRequest(
                    query=vector.tolist(),
                    limit=self.fetched(kind, limit),
                    with_payload=True,
                    score_threshold=None if threshold == -np.inf else threshold,
                )
                for vector in vectors
            ]
            found = [response.points for response in self._client.query_batch_points(name, requests)]
        return best_per_iri([[(float(p.score), p.payload or {}) for p in points] for points in found], limit)

    def ranking(
        self, collection: str, kind: Kind, vector: np.ndarray, limit: int, within: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """A scoped ranking is Qdrant's filtered search: the IRI payload is indexed."""
        if within is None:
            return super().ranking(collection, kind, vector, limit)
        name = self.name(collection, kind)
        with self._lock:
            if not within or not self._exists(name):
                return []
            only = models.Filter(must=[models.FieldCondition(key="iri", match=models.MatchAny(any=list(within)))])
            found = self._client.query_points(
                name, query=vector.tolist(), query_filter=only, limit=self.fetched(kind, limit), with_payload=["iri"]
            ).points
        (hits,) = best_per_iri([[(float(p.score), p.payload or {}) for p in found]], limit)
        return [(hit.iri, hit.score) for hit in hits]

    def existing(self, collection: str, kind: Kind, iris: Sequence[str], facet: Facet = "") -> set[str]:
        name = self.name(collection, kind)
        with self._lock:
            if not iris or not self._exists(name):
                return set()
            points = self._client.retrieve(
                name, ids=[point_id(i, facet) for i in iris], with_payload=True, with_vectors=False
            )
        return {(p.payload or {})["iri"] for p in points}

    def vectors_of(self, collection: str, kind: Kind, iris: Sequence[str], facet: Facet = "") -> dict[str, np.ndarray]:
        name = self.name(collection, kind)
        with self._lock:
            if not iris or not self._exists(name):
                return {}
            points = self._client.retrieve(
                name, ids=[point_id(i, facet) for i in iris], with_payload=True, with_vectors=True
            )
        return {(p.payload or {})["iri"]: np.asarray(p.vector, dtype=np.float32) for p in points}

    def delete(self, collection: str, kind: Kind, iris: Sequence[str]) -> None:
        name = self.name(collection, kind)
        with self._lock:
            if iris and self._exists(name):
                for start in range(0, len(iris), DELETE_BATCH):  # every facet's point: by the IRI they carry
                    match = models.MatchAny(any=list(iris[start : start + DELETE_BATCH]))
                    selector = models.Filter(must=[models.FieldCondition(key="iri", match=match)])
                    self._client.delete(name, points_selector=models.FilterSelector(filter=selector), wait=True)

    def points(self, collection: str, kind: Kind) -> tuple[np.ndarray, list[Payload]]:
        name = self.name(collection, kind)
        # each page an array at once: 1M vectors as Python floats take ~10 GB
        pages = [np.zeros((0, self.dim), dtype=np.float32)]
        payloads: list[Payload] = []
        with self._lock:
            if not self._exists(name):
                return pages[0], []
            offset = None
            while True:
                found, offset = self._client.scroll(
                    name, limit=PAGE, offset=offset, with_payload=True, with_vectors=True
                )
                pages.append(np.asarray([p.vector for p in found], dtype=np.float32).reshape(len(found), self.dim))
                payloads += [p.payload or {} for p in found]
                if offset is None:
                    return np.vstack(pages), payloads

    def iris(self, collection: str, kind: Kind) -> set[str]:
        name, found, offset = self.name(collection, kind), set(), None
        with self._lock:
            if not self._exists(name):
                return set()
            while True:
                points, offset = self._client.scroll(name, limit=PAGE, offset=offset, with_payload=["iri"])
                found |= {(p.payload or {})["iri"] for p in points}
                if offset is None:
                    return found

    def count(self, collection: str, kind: Kind) -> int:
        name = self.name(collection, kind)
        with self._lock:
            return self._client.count(name).count if self._exists(name) else 0

    def drop(self, collection: str) -> None:
        with self._lock:
            for kind in KINDS:
                name = self.name(collection, kind)
                if self._exists(name):
                    self._client.delete_collection(name)
                self._known.discard(name)
