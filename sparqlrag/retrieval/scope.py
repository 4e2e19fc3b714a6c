"""A question's scope: the chunks it may be answered from, and what picked them.

A scope is a pre-filter: every ranking is taken within it (vector_index.py, keyword_index.py),
so a scoped search returns its k best even when the collection's top k holds none of them.
operations/scopes.py makes one from document ids or a SPARQL pattern, under the caller's grants.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyoxigraph import Triple


@dataclass(frozen=True)
class Scope:
    chunks: frozenset[str]
    documents: tuple[str, ...] = ()  # the document IRIs asked for by id
    pattern: str | None = None  # the SPARQL group pattern that picked the documents


@dataclass(frozen=True)
class GraphScope:
    """A scope as Graph RAG's walk reads it: the facts its chunks state (by their reifiers,
    which name the fact index's points) and the entities those facts name. Seeds, edges,
    sources and passages are each taken within it."""

    scope: Scope
    facts: frozenset[Triple]
    statements: frozenset[str]
    entities: frozenset[str]

    @property
    def chunks(self) -> frozenset[str]:
        return self.scope.chunks
