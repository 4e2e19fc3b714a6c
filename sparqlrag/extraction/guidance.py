"""What ontology-guided extraction (guided.py) needs of an ontology, as protocols.

The ontology package implements them (`ontology.owl.OntologyModel`, `ontology.selection.Guides`);
extraction never imports it, so neither package imports the other (docs/architecture.md).
services.py hands the ontology's guides in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TypeVar


class OntologyClass(Protocol):
    @property
    def iri(self) -> str: ...

    @property
    def label(self) -> str: ...


class OntologyProperty(Protocol):
    @property
    def iri(self) -> str: ...

    @property
    def label(self) -> str: ...

    @property
    def kind(self) -> str: ...  # "object", "datatype" or "annotation"

    @property
    def domain(self) -> tuple[str, ...]: ...

    @property
    def range(self) -> tuple[str, ...]: ...


class Terms(Protocol):
    """An ontology's classes and properties (a whole ontology, or the subset a chunk is shown)."""

    @property
    def classes(self) -> Mapping[str, OntologyClass]: ...

    @property
    def properties(self) -> Mapping[str, OntologyProperty]: ...


class Ontology(Terms, Protocol):
    def is_a(self, cls: str, expected: Iterable[str]) -> bool:
        """Whether `cls` is one of `expected` or below one (an empty `expected` allows anything)."""
        ...


S = TypeVar("S", bound=Terms)


class Guide(Protocol[S]):
    """One ontology as guided extraction reads it: the whole of it (to check answers against),
    the subset each chunk is about, and a subset as a prompt shows it."""

    @property
    def ontology(self) -> Ontology: ...

    def subsets(self, chunks: list[str]) -> list[S]: ...

    def describe(self, subset: S) -> dict[str, str]: ...


class Guides(Protocol):
    def get(self, name: str) -> Guide[Any]:
        """The guide of a loaded ontology, by name."""
        ...
