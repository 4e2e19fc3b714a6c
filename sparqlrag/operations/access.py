"""What a bearer token may do: read, or write (which implies read), over every collection or
over named ones.

`read_tokens` and `write_tokens` reach every collection; a token in `collection_tokens` holds
grants such as `read:finance` and `write:finance` and reaches those collections alone. A
collection's data is its graphs, `{base}graph/C` and `{base}graph/C/...`: that is what the
SPARQL and Graph Store routes narrow a limited token to.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Literal

from sparqlrag.config import Settings
from sparqlrag.library.collections import Collections
from sparqlrag.operations.failures import Refused
from sparqlrag.store.sandbox import mentions_remote_access
from sparqlrag.store.vocab import InvalidName, check_collection, collection_of_graph

Scope = Literal["read", "write"]
VERBS: dict[Scope, str] = {"read": "read", "write": "change"}


@dataclass(frozen=True)
class Access:
    """Per scope, the collections a token reaches; None: every collection (and what belongs to
    none, such as ontologies' writes or the whole dataset)."""

    reads: frozenset[str] | None
    writes: frozenset[str] | None

    @property
    def limited(self) -> bool:
        """Whether the token reaches only some collections (a read-only token for all is not)."""
        return self.reads is not None

    def collections(self, scope: Scope) -> frozenset[str] | None:
        return self.writes if scope == "write" else self.reads

    def anywhere(self, scope: Scope) -> bool:
        """Whether the token has the scope on at least one collection."""
        reached = self.collections(scope)
        return reached is None or bool(reached)

    def everywhere(self, scope: Scope) -> bool:
        return self.collections(scope) is None

    def may(self, scope: Scope, collection: str) -> bool:
        reached = self.collections(scope)
        return reached is None or collection in reached

    def check(self, scope: Scope, collection: str) -> None:
        """Refused (403) unless the token may act on `collection` with `scope`."""
        if not self.may(scope, collection):
            raise Refused(403, "forbidden", f"the bearer token may not {VERBS[scope]} collection {collection!r}")

    def may_graph(self, scope: Scope, base_iri: str, graph: str) -> bool:
        """Whether `graph` is a graph of a collection the token reaches with the scope."""
        if self.everywhere(scope):
            return True
        collection = collection_of_graph(base_iri, graph)
        return collection is not None and self.may(scope, collection)


EVERYTHING = Access(None, None)
READ_EVERYTHING = Access(None, frozenset())


def parse_grants(grants: list[str]) -> Access:
    """`["read:a", "write:b"]` (their form checked by Settings) as an Access, write implying
    read; ValueError names a grant whose collection name is not one."""
    reads: set[str] = set()
    writes: set[str] = set()
    for grant in grants:
        scope, _, collection = grant.partition(":")
        try:
            check_collection(collection)
        except InvalidName as error:
            raise ValueError(f"grant {grant!r}: {error}") from None
        reads.add(collection)
        if scope == "write":
            writes.add(collection)
    return Access(frozenset(reads), frozenset(writes))


def readable_graphs(collections: Collections, access: Access) -> list[str]:
    """The dataset a limited token's query runs on: its collections' graphs that exist, and
    each one's knowledge graph whether or not it does, so the list is never empty (an empty
    protocol dataset would mean "the store's own" to a remote store)."""
    reads = access.collections("read") or frozenset()
    named = [g for g in collections.store.named_graphs() if access.may_graph("read", collections.base_iri, g)]
    return list(dict.fromkeys([*(collections.iris(c).knowledge_graph.value for c in sorted(reads)), *named]))


def remote_refusal(sparql: str) -> str | None:
    """Why a limited token may not send `sparql`: SERVICE or LOAD could reach a store of record
    that trusts this server's network. None when it may."""
    if mentions_remote_access(sparql):
        return "a token limited to some collections cannot use SERVICE or LOAD (nor those words anywhere)"
    return None


def check_grants(settings: Settings) -> None:
    """Every collection token's grants, read once at start so a bad one stops the server there."""
    for grants in settings.collection_tokens.values():
        parse_grants(grants)


def _matches(token: str, candidates: list[str]) -> bool:
    return any(hmac.compare_digest(token.encode(), candidate.encode()) for candidate in candidates)


def token_access(settings: Settings, token: str) -> Access | None:
    """What `token` may do; None for a token this server does not know."""
    if _matches(token, settings.write_tokens):
        return EVERYTHING
    if _matches(token, settings.read_tokens):
        return READ_EVERYTHING
    for candidate, grants in settings.collection_tokens.items():
        if hmac.compare_digest(token.encode(), candidate.encode()):
            return parse_grants(grants)
    return None
