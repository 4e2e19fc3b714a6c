"""Per-document locks and the collections held shut, shared by ingest, forget, collection
deletion and core import, so that none of them runs under another on the same documents."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

from sparqlrag.library.librarian import CollectionBusy


class Locks:
    """Per-document locks, dropped once nobody holds or awaits them, and the number of
    operations running in each collection (a collection is not deleted under an ingest)."""

    def __init__(self) -> None:
        self._locks: dict[tuple[str, str], tuple[asyncio.Lock, list[int]]] = {}
        self.active: Counter[str] = Counter()
        self.closing: set[str] = set()

    @asynccontextmanager
    async def documents(self, collection: str, document_ids: Iterable[str]) -> AsyncIterator[None]:
        if collection in self.closing:
            raise CollectionBusy(f"collection {collection!r} is being deleted")
        keys = sorted({(collection, document_id) for document_id in document_ids})  # one order: no deadlock
        for key in keys:
            self._locks.setdefault(key, (asyncio.Lock(), [0]))[1][0] += 1
        self.active[collection] += 1
        held: list[asyncio.Lock] = []
        try:
            for key in keys:
                await self._locks[key][0].acquire()
                held.append(self._locks[key][0])
            yield
        finally:
            for lock in held:
                lock.release()
            for key in keys:
                users = self._locks[key][1]
                users[0] -= 1
                if users[0] == 0:
                    del self._locks[key]
            self.active[collection] -= 1
            if self.active[collection] == 0:
                del self.active[collection]

    @asynccontextmanager
    async def closed(self, collection: str) -> AsyncIterator[None]:
        """Hold a collection shut: refused if anything runs in it, and nothing starts meanwhile."""
        if self.active[collection] or collection in self.closing:
            raise CollectionBusy(f"collection {collection!r} has ingests running; delete it when they finish")
        self.closing.add(collection)
        try:
            yield
        finally:
            self.closing.discard(collection)
