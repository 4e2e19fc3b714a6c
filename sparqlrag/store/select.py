"""SELECT results as plain rows, for the system's own queries: values as strings, or as RDF terms."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from typing import Any

from pyoxigraph import BlankNode, Literal, NamedNode, Triple

from sparqlrag.store.base import QuadStore
from sparqlrag.store.sparql_text import slices, values

Term = NamedNode | BlankNode | Literal | Triple


def lexical(term: Term) -> str:
    """A term's IRI, blank node label or lexical form; a quoted triple as N-Triples."""
    return str(term) if isinstance(term, Triple) else term.value


def _bindings(store: QuadStore, sparql: str, timeout: float | None) -> list[dict[str, dict[str, Any]]]:
    """SELECT over the real dataset (no union default graph: our queries name graphs)."""
    result = store.query(sparql, accept="application/sparql-results+json", timeout=timeout)
    bindings: list[dict[str, dict[str, Any]]] = json.loads(result.body)["results"]["bindings"]
    return bindings


def select(store: QuadStore, sparql: str, timeout: float | None = None) -> list[dict[str, str]]:
    """Rows of a SELECT, each value as its lexical form or IRI (a triple term as N-Triples);
    `timeout`: the seconds it may run (QueryTimeout past them, where the store can stop it)."""
    return [{name: _text(value) for name, value in row.items()} for row in _bindings(store, sparql, timeout)]


def _text(value: dict[str, Any]) -> str:
    found = value["value"]
    return found if isinstance(found, str) else lexical(_term(value))


def number(value: str | Term | None, default: float | None = None) -> float | None:
    """A number read back from a graph that clients may write (a collection's own graphs):
    `default` when the value is missing, no number, or not finite, never an exception."""
    text = value if value is None or isinstance(value, str) else lexical(value)
    try:
        found = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
    return found if math.isfinite(found) else default


def count(value: str | Term | None) -> int | None:
    """A count (pages, facts) read back from a graph clients may write: None unless a whole
    number, never an exception."""
    found = number(value)
    return int(found) if found is not None and found >= 0 and found == int(found) else None


def select_values(
    store: QuadStore, variable: str, terms: Iterable[object], query: Callable[[str], str]
) -> list[dict[str, str]]:
    """Rows of `query(VALUES block)` for every term, asked VALUES_BATCH terms at a time (a store
    limits a query's VALUES: Virtuoso near 4,000): for queries whose rows each depend on one term."""
    return [row for some in slices(list(terms)) for row in select(store, query(values(variable, some)))]


def select_terms(store: QuadStore, sparql: str, timeout: float | None = None) -> list[dict[str, Term]]:
    """Rows of a SELECT, each value as the RDF term it is (kind, datatype and language kept)."""
    return [{name: _term(value) for name, value in row.items()} for row in _bindings(store, sparql, timeout)]


def _term(value: dict[str, Any]) -> Term:
    kind = value["type"]
    if kind == "uri":
        return NamedNode(value["value"])
    if kind == "bnode":
        return BlankNode(value["value"])
    if kind == "triple":
        part = value["value"]
        return Triple(_term(part["subject"]), _term(part["predicate"]), _term(part["object"]))  # type: ignore[arg-type]
    if "xml:lang" in value:
        return Literal(value["value"], language=value["xml:lang"])
    if "datatype" in value:
        return Literal(value["value"], datatype=NamedNode(value["datatype"]))
    return Literal(value["value"])
