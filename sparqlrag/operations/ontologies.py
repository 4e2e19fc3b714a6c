"""Ontologies: load (or reload) one under a name, list, serialize for a tool, look up by its
IRI, show its classes and properties, remove. They live in the store, apart from any
collection, so every call takes the registry (`registry`) rather than a collection.
"""

from __future__ import annotations

from pyoxigraph import RdfFormat

from sparqlrag.ontology.formats import FORMAT_NAMES
from sparqlrag.ontology.owl import OntologyError, OntologyModel
from sparqlrag.ontology.registry import LoadResult, Ontologies, OntologyConflict, OntologyInfo, UnknownOntology
from sparqlrag.operations.failures import Refused
from sparqlrag.store.base import QuadStore
from sparqlrag.store.vocab import InvalidName
from sparqlrag.threads import off_loop

__all__ = ["FORMAT_NAMES", "LoadResult", "Ontologies", "OntologyInfo", "OntologyModel"]


def registry(store: QuadStore, base_iri: str) -> Ontologies:
    """The store's ontologies (what a command that loads no models works with)."""
    return Ontologies(store, base_iri)


async def load(
    ontologies: Ontologies,
    name: str,
    data: bytes,
    *,
    media_type: str | None = None,
    filename: str | None = None,
    format: str | None = None,
    replace: bool = False,
) -> LoadResult:
    """`data` loaded as ontology `name` (`format` one of FORMAT_NAMES, else guessed): 400 for a
    bad name or an unreadable ontology, 409 when the name or IRI holds another one and `replace`
    is not set."""
    if not data.strip():
        raise Refused(400, "bad_ontology", "the ontology is empty")
    try:
        return await off_loop(
            ontologies.load_sync,
            name,
            data,
            media_type or None,
            filename,
            FORMAT_NAMES[format] if format else None,
            replace,
        )
    except InvalidName as error:
        raise Refused(400, "bad_name", str(error)) from None
    except OntologyError as error:
        raise Refused(400, "bad_ontology", str(error)) from None
    except OntologyConflict as error:
        raise Refused(409, "ontology_conflict", str(error)) from None


async def listed(ontologies: Ontologies) -> list[OntologyInfo]:
    return await ontologies.list()


async def serialized(ontologies: Ontologies, name: str, format: RdfFormat) -> bytes:
    """The ontology in `format`; 404 when none has the name."""
    try:
        return await off_loop(ontologies.serialize_sync, name, format)
    except (UnknownOntology, InvalidName) as error:
        raise _missing(error) from None


async def shown(ontologies: Ontologies, name: str) -> tuple[OntologyInfo, OntologyModel]:
    """The ontology's registration and its classes and properties; 404 when none has the name."""
    try:
        return await ontologies.info(name), await off_loop(ontologies.model_sync, name)
    except (UnknownOntology, InvalidName) as error:
        raise _missing(error) from None


async def published(ontologies: Ontologies, iri: str) -> OntologyInfo | None:
    """The ontology whose IRI is `iri` (one under the base IRI is served there)."""
    return await ontologies.by_iri(iri)


async def remove(ontologies: Ontologies, name: str) -> None:
    """404 when none has the name; 409 while a collection extracts with it."""
    try:
        await ontologies.remove(name)
    except (UnknownOntology, InvalidName) as error:
        raise _missing(error) from None
    except OntologyConflict as error:
        raise Refused(409, "ontology_in_use", str(error)) from None


def _missing(error: Exception) -> Refused:
    return Refused(404, "ontology_not_found", str(error))
