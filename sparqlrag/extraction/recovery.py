"""Putting right what a killed process left, at start: index rows of ingests it did not
commit and of documents it was forgetting are swept (`sweep_crashed`, before anything else
writes), then the ingests it did not finish run again from the library's copy (`recover`), so
a document is either in its old state or fully in its new one (pipeline.py).
"""

from __future__ import annotations

import logging

from sparqlrag.extraction.indexing import Indexer
from sparqlrag.extraction.pipeline import Pipeline
from sparqlrag.extraction.plans import IngestResult
from sparqlrag.library import librarian
from sparqlrag.library.collections import Collections
from sparqlrag.library.files import Library
from sparqlrag.store.base import StorageFull, StoreError, StoreUnavailable
from sparqlrag.threads import off_loop

log = logging.getLogger("sparqlrag.ingest")


class Recovery:
    def __init__(self, pipeline: Pipeline, library: Library, indexer: Indexer, collections: Collections) -> None:
        """`pipeline` ingests again, and records what cannot be; the library keeps the markers;
        `collections` names the collections they are in."""
        self.pipeline, self.library, self.indexer, self.collections = pipeline, library, indexer, collections

    async def sweep_crashed(self) -> None:
        """Index rows a killed process left, in each collection a pending marker or a forget's
        mark names: rows written for an ingest it did not commit, rows of what it forgot.
        Removed before anything else writes (see Indexer.sweep)."""
        collections = set()
        for marker in self.library.markers():
            try:
                collections.add(self.library.pending(marker).collection)
            except (OSError, ValueError, TypeError):
                continue  # recover() reports it
        forgets = await off_loop(self.library.begun, "forget")
        collections |= {details["collection"] for _, details in forgets}
        for collection in sorted(collections):
            if await self.collections.exists(collection):
                if removed := await self.indexer.sweep(self.collections.iris(collection)):
                    log.warning("removed index rows of %d IRIs a stopped process left in %r", removed, collection)
        for mark, _ in forgets:
            mark.unlink(missing_ok=True)

    async def recover(self) -> list[IngestResult | Exception]:
        """Finish the ingests a previous process did not (it was killed): ingest them again.
        A marker that cannot be replayed is reported once and dropped, its document `failed`;
        one whose collection is gone takes that collection's library copies with it; one the
        store cannot take now (down, disk full) stays for the next start."""
        results: list[IngestResult | Exception] = []
        for marker in self.library.markers():
            try:
                pending = self.library.pending(marker)
            except (OSError, ValueError, TypeError) as error:
                log.warning("could not read the pending ingest %s: %s", marker, error)
                marker.unlink(missing_ok=True)
                results.append(error)
                continue
            try:
                upload, data = await off_loop(self.library.load, pending.collection, pending.document_id)
                results.append(
                    await self.pipeline.ingest(
                        self.collections.iris(upload.collection),
                        upload.document_id,
                        data,
                        media_type=upload.media_type,
                        filename=upload.filename,
                        title=upload.title,
                    )
                )
            except (StoreUnavailable, StorageFull) as error:  # the marker stays for the next start
                log.warning("could not resume the ingest saved in %s yet: %s", marker, error)
                results.append(error)
                continue
            except Exception as error:
                log.warning("could not resume the ingest saved in %s: %s", marker, error)
                marker.unlink(missing_ok=True)
                if isinstance(error, librarian.UnknownCollection):  # deleted while the marker waited
                    await off_loop(self.library.discard_collection, pending.collection)
                else:
                    await self._given_up(pending.collection, pending.document_id)
                results.append(error)
        return results

    async def _given_up(self, collection: str, document_id: str) -> None:
        """A document whose ingest will not be resumed is `failed`, not `queued` for ever (a
        re-upload or `reingest` starts it again)."""
        iris = self.collections.iris(collection)
        document = iris.document(document_id)
        try:
            recorded = await off_loop(librarian.documents, self.pipeline.store, iris, document)
        except StoreError as error:
            log.warning("%s stays pending (its status could not be read: %s)", document.value, error)
            return
        if recorded and recorded[0].status in (librarian.QUEUED, librarian.PROCESSING):
            await self.pipeline.record_failed(iris, document)
