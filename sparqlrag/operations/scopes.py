"""A question's scope, made from what the caller names: document ids, or a SPARQL group pattern
whose solutions bind the documents (or chunks) to answer from.

The pattern is evaluated as the caller's own query would be: over its dataset (a token limited
to some collections sees their graphs alone, so a pattern naming another collection's documents
finds nothing), with no SERVICE or LOAD for such a token, and within the query deadline. Only
the ready chunks of the collection asked are kept from what it picks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from pyoxigraph import NamedNode

from sparqlrag.operations.access import readable_graphs, remote_refusal
from sparqlrag.operations.collection import Collection
from sparqlrag.operations.failures import Refused
from sparqlrag.retrieval.scope import Scope
from sparqlrag.store import vocab
from sparqlrag.store.base import Graph
from sparqlrag.store.select import select_values
from sparqlrag.store.sparql_text import sparql_term, tokens
from sparqlrag.threads import off_loop

DOCUMENT = "document"  # the variable a scope pattern binds, in the routes, the CLI and MCP


@dataclass(frozen=True)
class Dataset:
    """What a caller's pattern is evaluated over: its query's dataset."""

    default_graphs: list[Graph] | None = None
    named_graphs: list[str] | None = None
    union_default_graph: bool = False


async def caller_dataset(collection: Collection) -> Dataset:
    """The dataset the caller's queries run on at /sparql when they name none."""
    services, access = collection.services, collection.access
    if not access.limited:
        return Dataset(union_default_graph=services.settings.union_default_graph)
    readable = await off_loop(readable_graphs, services.collections, access)
    return Dataset(list(readable), readable)


def check_pattern(pattern: str, variables: Iterable[str]) -> None:
    """400 unless `pattern` is one group pattern's content (its braces balance) that mentions
    one of `variables` (else it could not pick anything)."""
    found = tokens(pattern)
    if any(t.depth < 0 for t in found) or sum(t.kind == "open" for t in found) != sum(t.kind == "close" for t in found):
        raise Refused(400, "bad_scope", "the scope is not a group pattern: its braces do not balance")
    named = {t.text[1:] for t in found if t.kind == "var"}
    if not named & set(variables):
        wanted = " or ".join(f"?{v}" for v in variables)
        raise Refused(400, "bad_scope", f"the scope pattern must bind {wanted}: that is what it picks")


async def scope_of(
    collection: Collection,
    *,
    documents: list[str] | None = None,
    pattern: str | None = None,
    binds: str = DOCUMENT,
    chunks: bool = False,
    prologue: str = vocab.SPARQL_PREFIXES,
    dataset: Dataset | None = None,
    timeout: float | None = None,
) -> Scope | None:
    """The scope the caller names (None when it names none): the ready chunks of the documents
    with those ids, and of those the pattern binds to `?{binds}` (the chunks it binds, when
    `chunks`); both given, those both pick. 404 for an id no document has."""
    if documents is None and pattern is None:
        return None
    named = [collection.iris.document(d).value for d in dict.fromkeys(documents or [])]
    if documents is not None:
        found = await off_loop(_existing, collection, named)
        if missing := [d for d, iri in zip(dict.fromkeys(documents), named) if iri not in found]:
            raise Refused(404, "document_not_found", f"no document {missing[0]!r} in collection {collection.name!r}")
    if pattern is None:
        ready = await off_loop(_ready_chunks, collection, "doc", named)
    else:
        check_pattern(pattern, [binds])
        if collection.access.limited and (refused := remote_refusal(pattern)):
            raise Refused(403, "forbidden", refused)
        query = f"{prologue}\nSELECT DISTINCT ?{binds} WHERE {{ {pattern} }}"
        picked = await _picked(collection, query, binds, dataset or await caller_dataset(collection), timeout)
        if not chunks and documents is not None:
            picked &= set(named)
        ready = await off_loop(_ready_chunks, collection, "chunk" if chunks else "doc", picked)
        if chunks and documents is not None:
            ready &= await off_loop(_ready_chunks, collection, "doc", named)
    return Scope(frozenset(ready), tuple(named), pattern)


async def _picked(
    collection: Collection, query: str, variable: str, dataset: Dataset, timeout: float | None
) -> set[str]:
    """The IRIs the query binds to `variable`, evaluated as the caller's query (its dataset,
    the base IRI, the deadline)."""
    services = collection.services
    settings = services.settings
    result = await off_loop(
        services.store.query,
        query,
        accept="application/sparql-results+json",
        base_iri=settings.base_iri,
        default_graphs=dataset.default_graphs,
        named_graphs=dataset.named_graphs,
        union_default_graph=dataset.union_default_graph,
        timeout=settings.query_timeout if timeout is None else timeout,
        max_bytes=settings.max_result_bytes,
    )
    rows = json.loads(result.body)["results"]["bindings"]
    return {row[variable]["value"] for row in rows if row.get(variable, {}).get("type") == "uri"}


def _existing(collection: Collection, documents: list[str]) -> set[str]:
    """Which of the document IRIs the collection's source graph holds."""
    source = sparql_term(collection.iris.source_graph)
    rows = select_values(
        collection.services.store,
        "doc",
        map(NamedNode, documents),
        lambda block: f"SELECT ?doc WHERE {{ {block} GRAPH {source} {{ ?doc a {sparql_term(vocab.SR_DOCUMENT)} }} }}",
    )
    return {row["doc"] for row in rows}


def _ready_chunks(collection: Collection, by: str, iris: Iterable[str]) -> set[str]:
    """The collection's chunks of ready documents among `iris` (by="chunk") or of the documents
    `iris` (by="doc")."""
    source = sparql_term(collection.iris.source_graph)
    rows = select_values(
        collection.services.store,
        by,
        map(NamedNode, iris),
        lambda block: (
            vocab.SPARQL_PREFIXES
            + f"""SELECT ?chunk WHERE {{ {block} GRAPH {source} {{
          ?chunk prov:wasDerivedFrom ?doc ; sr:text [] . ?doc sr:status "{vocab.READY}" }} }}"""
        ),
    )
    return {row["chunk"] for row in rows}
