"""A question's scope, made from what the caller names: document ids, or a SPARQL group pattern
whose solutions bind the documents (or chunks) to answer from.

The pattern is evaluated as the caller's own query would be: over its dataset (a token limited
to some collections sees their graphs alone, so a pattern naming another collection's documents
finds nothing), with no SERVICE or LOAD for such a token, and within the query deadline. Only
the ready chunks of the collection asked are kept from what it picks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from pyoxigraph import NamedNode

from sparqlrag.operations.access import Access, readable_graphs, remote_refusal
from sparqlrag.operations.collection import Collection
from sparqlrag.operations.deadline import Deadline
from sparqlrag.operations.failures import Refused
from sparqlrag.retrieval.scope import Scope
from sparqlrag.services import Services
from sparqlrag.store import vocab
from sparqlrag.store.base import Graph
from sparqlrag.store.select import select
from sparqlrag.store.sparql_text import slices, sparql_term, tokens, values
from sparqlrag.threads import off_loop

DOCUMENT = "document"  # the variable a scope pattern binds, in the routes, the CLI and MCP


@dataclass(frozen=True)
class Dataset:
    """What a caller's pattern is evaluated over: its query's dataset."""

    default_graphs: list[Graph] | None = None
    named_graphs: list[str] | None = None
    union_default_graph: bool = False


async def caller_dataset(services: Services, access: Access) -> Dataset:
    """The dataset the caller's queries run on at /sparql when they name none."""
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


async def beside_embedding(collection: Collection, question: str, making: Awaitable[Scope | None]) -> Scope | None:
    """The scope `making` makes, made while the question is embedded for the search that
    follows (the store and the model each work on a thread of their own), so that a scope's
    query adds less to the answer's time."""
    embedding = asyncio.ensure_future(off_loop(collection.services.embedder.embed_one, question))
    try:
        return await making
    finally:
        with contextlib.suppress(Exception):  # (the search embeds again, and says what failed)
            await embedding


async def scope_of(
    collection: Collection,
    *,
    documents: list[str] | None = None,
    pattern: str | None = None,
    binds: str = DOCUMENT,
    chunks: bool = False,
    prologue: str = vocab.SPARQL_PREFIXES,
    dataset: Dataset | None = None,
    deadline: Deadline | None = None,
) -> Scope | None:
    """The scope the caller names (None when it names none): the ready chunks of the documents
    with those ids, and of those the pattern binds to `?{binds}` (the chunks it binds, when
    `chunks`); both given, those both pick. 404 for an id no document has."""
    if documents is None and pattern is None:
        return None
    deadline = deadline or Deadline(collection.services.settings.query_timeout)
    ids = list(dict.fromkeys(documents or []))
    named = [collection.iris.document(d).value for d in ids]
    if documents is not None:
        found = await off_loop(_existing, collection, named, deadline)
        if missing := [d for d, iri in zip(ids, named) if iri not in found]:
            raise Refused(404, "document_not_found", f"no document {missing[0]!r} in collection {collection.name!r}")
    if pattern is None:
        return Scope(frozenset(await off_loop(_ready_chunks, collection, "doc", named, deadline)), tuple(named))
    check_pattern(pattern, [binds])
    if collection.access.limited and (refused := remote_refusal(pattern)):
        raise Refused(403, "forbidden", refused)
    dataset = dataset or await caller_dataset(collection.services, collection.access)
    source = collection.iris.source_graph
    if dataset.named_graphs is None or source.value in dataset.named_graphs:  # one query picks the chunks
        picks = "?sr_chunk" if chunks else "?sr_doc"
        query = f"""{prologue}
        SELECT DISTINCT ?sr_chunk WHERE {{ {{ SELECT DISTINCT (?{binds} AS {picks}) WHERE {{ {pattern}
        }} }} {_ready(source, "?sr_chunk", "?sr_doc")} }}"""
        ready = await _picked(collection, query, "sr_chunk", dataset, deadline)
    else:  # the caller's dataset leaves the source graph out: what the pattern picks is looked up there apart
        query = f"{prologue}\nSELECT DISTINCT ?{binds} WHERE {{ {pattern}\n}}"
        picked = await _picked(collection, query, binds, dataset, deadline)
        ready = await off_loop(_ready_chunks, collection, "chunk" if chunks else "doc", picked, deadline)
    if documents is not None:
        ready &= await off_loop(_ready_chunks, collection, "doc", named, deadline)
    return Scope(frozenset(ready), tuple(named), pattern)


async def _picked(collection: Collection, query: str, variable: str, dataset: Dataset, deadline: Deadline) -> set[str]:
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
        timeout=deadline.left(),
        max_bytes=settings.max_result_bytes,
    )
    rows = json.loads(result.body)["results"]["bindings"]
    return {row[variable]["value"] for row in rows if row.get(variable, {}).get("type") == "uri"}


def _existing(collection: Collection, documents: list[str], deadline: Deadline) -> set[str]:
    """Which of the document IRIs the collection's source graph holds."""
    source, kind = sparql_term(collection.iris.source_graph), sparql_term(vocab.SR_DOCUMENT)
    return _rows(
        collection,
        documents,
        deadline,
        lambda block: f"SELECT ?doc WHERE {{ {block} GRAPH {source} {{ ?doc a {kind} }} }}",
        "doc",
    )


def _ready_chunks(collection: Collection, by: str, iris: Iterable[str], deadline: Deadline) -> set[str]:
    """The collection's chunks of ready documents among `iris` (by="chunk") or of the documents
    `iris` (by="doc")."""
    ready = _ready(collection.iris.source_graph, "?chunk", "?doc")
    return _rows(collection, iris, deadline, lambda block: f"SELECT ?chunk WHERE {{ {block} {ready} }}", "chunk", by)


def _ready(source: NamedNode, chunk: str, document: str) -> str:
    """The pattern of a source graph's chunks of ready documents: only a chunk is derived from
    a document (a fact's reifier is derived from chunks). (Written with FILTER EXISTS: as a
    join, Oxigraph 0.5 planned it ten times slower, 2,000 documents in 470 ms against 46.)"""
    derived, status = sparql_term(vocab.PROV_DERIVED), sparql_term(vocab.SR_STATUS)
    return f"""GRAPH {sparql_term(source)} {{ {chunk} {derived} {document}
      FILTER EXISTS {{ {document} {status} "{vocab.READY}" }} }}"""


def _rows(
    collection: Collection,
    iris: Iterable[str],
    deadline: Deadline,
    query: Callable[[str], str],
    wanted: str,
    by: str = "doc",
) -> set[str]:
    """`wanted` of each row of `query(VALUES block)`, the IRIs bound to `?{by}` a batch at a
    time, each batch within what is left of the deadline (a pattern may pick a great many)."""
    found: set[str] = set()
    for some in slices(sorted(iris)):
        deadline.left()
        found |= {row[wanted] for row in select(collection.services.store, query(values(by, map(NamedNode, some))))}
    return found
