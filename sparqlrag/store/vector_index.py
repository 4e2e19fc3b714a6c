"""Vector indexes: what every backend offers (local files by default, a Qdrant server when a URL is set).

Each knowledge collection has three indexes: `{collection}__chunks`, `{collection}__entities`
and `{collection}__facts` (the fact index: one point per walked fact, named by its reifier). A
point's id is derived from the IRI it indexes and its facet (UUID v5), so re-indexing the same
chunk or entity overwrites it and deleting needs only the IRIs (which the store knows); the
payload carries the IRI and whatever the caller adds (text, label). An IRI may have a point per
facet: an entity has one for its label, one for its label with its definition when it has
one, and one for each other name a loaded graph gives it (`skos:altLabel`, `alias_facet`); a
search returns each IRI once, at its best score. Vectors are stored at unit length.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

Kind = Literal["chunks", "entities", "facts"]
KINDS: tuple[Kind, ...] = ("chunks", "entities", "facts")
Facet = str  # "", "definition", or an alias_facet
FACETS: tuple[Facet, ...] = ("", "definition")  # the facets every entity may have
Payload = dict[str, Any]  # what a point carries beside its vector: its IRI, label, text, ...


@dataclass(frozen=True)
class Hit:
    iri: str
    score: float
    payload: Payload


def point_id(iri: str, facet: Facet = "") -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{iri}#{facet}" if facet else iri))


def alias_facet(name: str) -> Facet:
    """The facet of one of an entity's other names: a point per name, so a question that says
    any of them grounds on the entity."""
    return f"alias:{name}"


def unit(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero): cosine becomes a dot product."""
    array = np.asarray(vectors, dtype=np.float32)
    scaled: np.ndarray = array / np.maximum(np.linalg.norm(array, axis=-1, keepdims=True), 1e-12)
    return scaled


def stamped(iri: str, payload: Payload, facet: Facet) -> Payload:
    """The payload a point carries: the caller's, with its IRI and (when it has one) its facet."""
    return {**payload, "iri": iri} | ({"facet": facet} if facet else {})


def best_per_iri(ranked: list[list[tuple[float, Payload]]], limit: int) -> list[list[Hit]]:
    """Each query's (score, payload) pairs, best first, as hits: an IRI once, at its best facet."""
    out = []
    for hits in ranked:
        best: dict[str, Hit] = {}
        for score, payload in hits:  # best first: the first point of an IRI is its best
            best.setdefault(payload["iri"], Hit(payload["iri"], score, payload))
        out.append(list(best.values())[:limit])
    return out


class VectorIndex(ABC):
    """Thread-safe. `dim` is the embedding size every vector must have."""

    dim: int

    @staticmethod
    def name(collection: str, kind: Kind) -> str:
        return f"{collection}__{kind}"

    @staticmethod
    def fetched(kind: Kind, limit: int) -> int:
        """Points to fetch for `limit` IRIs: an entity may fill several places with its facets."""
        return limit * len(FACETS) if kind == "entities" else limit

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def upsert(
        self,
        collection: str,
        kind: Kind,
        iris: Sequence[str],
        vectors: np.ndarray,
        payloads: Sequence[Payload],
        facet: Facet = "",
    ) -> None:
        """Write points (stored at unit length); each payload gets its IRI (and facet) stamped."""

    def search(self, collection: str, kind: Kind, vector: np.ndarray, limit: int) -> list[Hit]:
        return self.search_many(collection, kind, vector[None, :], limit)[0]

    def ranking(
        self, collection: str, kind: Kind, vector: np.ndarray, limit: int, within: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """The `limit` nearest IRIs (IRI, score), best first, as `search` finds them; a backend
        may find them without reading their payloads. `within`: only those IRIs are ranked, so a
        scoped search returns `limit` of its own however far the scope lies from the top."""
        if within is None:
            return [(hit.iri, hit.score) for hit in self.search(collection, kind, vector, limit)]
        stored = self.vectors_of(collection, kind, list(within))
        if not stored:
            return []
        iris = list(stored)
        scores = unit(np.stack([stored[iri] for iri in iris])) @ unit(vector)
        return [(iris[i], float(scores[i])) for i in np.argsort(-scores)[:limit]]

    @abstractmethod
    def search_many(
        self, collection: str, kind: Kind, vectors: np.ndarray, limit: int, threshold: float = -np.inf
    ) -> list[list[Hit]]:
        """The `limit` nearest IRIs to each row of `vectors`, by cosine, best first; only those at
        `threshold` or above, when one is given."""

    @abstractmethod
    def existing(self, collection: str, kind: Kind, iris: Sequence[str], facet: Facet = "") -> set[str]:
        """Which of `iris` have a point (of `facet`) already."""

    @abstractmethod
    def vectors_of(self, collection: str, kind: Kind, iris: Sequence[str], facet: Facet = "") -> dict[str, np.ndarray]:
        """The stored vectors (of `facet`) of those `iris` that have one."""

    @abstractmethod
    def delete(self, collection: str, kind: Kind, iris: Sequence[str]) -> None:
        """Every point of each IRI, whatever its facet."""

    @abstractmethod
    def points(self, collection: str, kind: Kind) -> tuple[np.ndarray, list[Payload]]:
        """Every point of a collection's index: its vectors as one matrix, and their payloads
        (each with its "iri", and "facet" when it has one). What a knowledge core carries."""

    @abstractmethod
    def iris(self, collection: str, kind: Kind) -> set[str]:
        """Every IRI with a point."""

    @abstractmethod
    def count(self, collection: str, kind: Kind) -> int: ...

    @abstractmethod
    def drop(self, collection: str) -> None:
        """The collection's three indexes, gone."""

    @staticmethod
    def checked(iris: Sequence[str], vectors: np.ndarray, payloads: Sequence[Payload]) -> None:
        if len(iris) != len(vectors) or len(iris) != len(payloads):
            raise ValueError("iris, vectors and payloads must have the same length")
