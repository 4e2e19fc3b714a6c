"""Traces and statements as RDF: what `{base}trace/C/ID` and `{base}stmt/C/...` (a fact's
reifier) dereference to for an RDF client, the triples their graph holds about them.

A trace's details (its steps, seeds, edges, sources) hang from it as blank nodes, and on a
store of RDF 1.1 reification the facts they name are blank nodes once more; both levels come
with it, as the trace log deletes them (retrieval/trace.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyoxigraph import Triple

from sparqlrag.queries.describe import resolved
from sparqlrag.store.base import QuadStore
from sparqlrag.store.select import select_terms
from sparqlrag.store.sparql_text import sparql_term


@dataclass
class Record:
    """The triples a trace or a statement is described by."""

    iri: str
    collection: str
    found: list[Triple]

    def triples(self) -> list[Triple]:
        return self.found


def _read(store: QuadStore, base_iri: str, iri: str, kind: str, pattern: Callable[[str], str]) -> Record | None:
    """The triples `pattern(node)` (binding ?s ?p ?o) finds for the IRI in its graph (a trace's
    in the trace graph, a reifier's in the source graph); None when it is no IRI of ours, or its
    graph says nothing of it."""
    found = resolved(store, base_iri, iri, kind)
    if found is None:
        return None
    iris, node = found
    graph = sparql_term(iris.trace_graph if kind == "trace" else iris.source_graph)
    rows = select_terms(store, f"SELECT ?s ?p ?o WHERE {{ GRAPH {graph} {{ {pattern(sparql_term(node))} }} }}")
    triples = [Triple(row["s"], row["p"], row["o"]) for row in rows]  # type: ignore[arg-type]
    return Record(iri, iris.collection, list(dict.fromkeys(triples))) if triples else None


def _trace_pattern(node: str) -> str:
    """A trace's own triples, its details' and the facts they state (blank nodes, two deep)."""
    return f"""{{ {node} ?p ?o BIND({node} AS ?s) }}
        UNION {{ {node} ?link ?s FILTER(isBlank(?s)) ?s ?p ?o }}
        UNION {{ {node} ?link ?item FILTER(isBlank(?item)) ?item ?step ?s FILTER(isBlank(?s)) ?s ?p ?o }}"""


def describe_trace(store: QuadStore, base_iri: str, iri: str) -> Record | None:
    """A trace, with what hangs from it."""
    return _read(store, base_iri, iri, "trace", _trace_pattern)


def describe_statement(store: QuadStore, base_iri: str, iri: str) -> Record | None:
    """A fact's reifier: what it reifies, the chunks it was derived from, the rule and score of
    a merge, a person's decision."""
    return _read(store, base_iri, iri, "stmt", lambda node: f"{node} ?p ?o BIND({node} AS ?s)")
