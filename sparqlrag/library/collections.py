"""Collections: create, list (with counts) and delete with the full cascade; and the one place
a collection's name becomes its IRIs (`iris`), for everything the store or the library names.

Everything of a collection lives under its name: its registration in the registry graph, three
named graphs, its vector, keyword and graph index rows, a folder of the library. Deleting it
removes them all; documents cannot be added to a collection that was never created (`default`
always exists).
"""

from __future__ import annotations

import logging

from pyoxigraph import NamedNode, Quad

from sparqlrag.library import librarian
from sparqlrag.library.files import Library
from sparqlrag.library.librarian import CollectionInfo
from sparqlrag.library.locks import Locks
from sparqlrag.store import vocab
from sparqlrag.store.base import QuadStore
from sparqlrag.store.graph_index import GraphIndex
from sparqlrag.store.keyword_index import KeywordIndex
from sparqlrag.store.select import select_terms
from sparqlrag.store.sparql_text import move_data, sparql_term
from sparqlrag.store.vector_index import VectorIndex
from sparqlrag.store.vocab import Iris
from sparqlrag.threads import off_loop

log = logging.getLogger(__name__)


class Collections:
    def __init__(
        self,
        *,
        store: QuadStore,
        base_iri: str,
        locks: Locks,
        vectors: VectorIndex,
        keywords: KeywordIndex,
        graph: GraphIndex,
        library: Library,
    ) -> None:
        self.store, self.base_iri, self.locks = store, base_iri, locks
        self.vectors, self.keywords, self.graph, self.library = vectors, keywords, graph, library

    def iris(self, name: str, base: str | None = None) -> Iris:
        """The IRIs of collection `name` here (or under another `base`: a knowledge core's).
        Raises InvalidName."""
        return Iris(base or self.base_iri, name)

    async def exists(self, name: str) -> bool:
        return await off_loop(librarian.collection_exists, self.store, self.iris(name))

    async def create(self, name: str, ontology: str | None = None) -> bool:
        """Register `name`, its extraction guided by the loaded `ontology` if given (the caller
        checks that it is loaded); False when it exists already."""
        iris = self.iris(name)
        async with self.locks.closed(name):  # not while it is being deleted
            if await self.exists(name):
                return False
            await off_loop(self.store.update, vocab.SPARQL_PREFIXES + librarian.register_collection(iris, ontology))
            return True

    def list_sync(self) -> list[CollectionInfo]:
        names = librarian.collection_names(self.store, self.base_iri)
        return [info for name in names if (info := librarian.collection_info(self.store, self.iris(name))) is not None]

    async def list(self) -> list[CollectionInfo]:
        """Every registered collection (and `default`), by name, with its counts."""
        return await off_loop(self.list_sync)

    def move_registrations(self) -> int:
        """Move registrations that data directories made before the registry graph keep in each
        collection's source graph (`{base}collection/C` in `{base}graph/C/source`, nothing else)
        into the registry; run at start. Returns how many collections moved."""
        registry = vocab.registry_graph(self.base_iri)
        rows = select_terms(
            self.store,
            f"""SELECT ?g ?c ?p ?o WHERE {{ GRAPH ?g {{ ?c a {sparql_term(vocab.SR_COLLECTION)} ; ?p ?o }}
            FILTER(?g != {sparql_term(registry)}) }}""",
        )
        prefix, moved = f"{self.base_iri}collection/", set()
        quads: list[Quad] = []
        for row in rows:
            graph, node, predicate, value = row["g"], row["c"], row["p"], row["o"]
            name = node.value[len(prefix) :] if isinstance(node, NamedNode) and node.value.startswith(prefix) else ""
            if not vocab.is_name(name) or graph != self.iris(name).source_graph or not isinstance(predicate, NamedNode):
                continue
            quads.append(Quad(node, predicate, value, graph))  # type: ignore[arg-type]
            moved.add(name)
        if quads:
            self.store.update(move_data(quads, registry))
            log.warning("moved the registrations of %d collections into %s", len(moved), registry.value)
        return len(moved)

    async def get(self, name: str) -> CollectionInfo | None:
        return await off_loop(librarian.collection_info, self.store, self.iris(name))

    async def delete(self, name: str) -> bool:
        """Drop the collection's graphs, vectors, keyword rows and library; False when unknown.
        Raises CollectionBusy while ingests run in it. `default` is emptied and stays."""
        async with self.locks.closed(name):
            if not await self.exists(name):
                return False
            await off_loop(self.drop_sync, self.iris(name))
            return True

    def drop_sync(self, iris: Iris) -> None:
        """Everything of a collection gone (graphs, vectors, keyword rows, library), its
        registration with it; the caller holds the collection closed. A process killed part-way
        leaves a mark, and the next start drops the rest (finish_drops)."""
        self.library.begin("drop", iris.collection)
        graphs = (iris.knowledge_graph, iris.source_graph, iris.trace_graph)
        drops = [f"DROP SILENT GRAPH {sparql_term(g)}" for g in graphs]
        self.store.update(" ;\n".join([*drops, librarian.unregister_collection(iris)]))
        self.vectors.drop(iris.collection)
        self.keywords.drop(iris.collection)
        self.graph.drop(iris.collection)
        self.library.discard_collection(iris.collection)  # (the drop's mark with the rest)

    async def finish_drops(self) -> None:
        """Finish the deletes a killed process left part-way (its graphs gone but not its vectors,
        say); run at start, before anything writes."""
        for _, details in await off_loop(self.library.begun, "drop"):
            await off_loop(self.drop_sync, self.iris(details["collection"]))
            log.warning("finished deleting collection %r, which a stopped process left part-way", details["collection"])
