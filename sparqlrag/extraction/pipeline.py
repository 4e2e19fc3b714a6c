"""Ingesting and forgetting documents, with provenance, indexes and crash safety.

One document's change reaches the store in one SPARQL update (one transaction): the
chunks that vanished leave with the facts only they supported, new chunks arrive with their
facts, and the document turns `ready`. Before that, vectors and keyword rows are written;
they are keyed by IRI, so writing them twice is harmless, and retrieval only trusts chunks
the store knows.

Chunks are named by their content, so re-ingesting changed text extracts only the chunks
whose text changed; unchanged content is a no-op, unless re-extraction is forced
(`reingest`, e.g. after changing the extractor). The library keeps each document's latest
bytes under `work_dir/library/` (what `reingest` reads). Before processing, a marker is saved
under `work_dir/pending/`; if the process dies (kill -9), `recover()` finds it there and
ingests the document again, so a document is either in its old state, or fully in its new one
(recovery.py).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from pyoxigraph import NamedNode

from sparqlrag.extraction import resolver
from sparqlrag.extraction.batch_resolution import resolve_batch
from sparqlrag.extraction.chunker import Piece, split
from sparqlrag.extraction.decode_pool import DecodePool
from sparqlrag.extraction.decoders import Decoded
from sparqlrag.extraction.extractions import Extractions
from sparqlrag.extraction.indexing import Indexed, Indexer
from sparqlrag.extraction.knowledge import Extractor, Knowledge
from sparqlrag.extraction.plans import (
    ChunkProgress,
    Committed,
    IngestResult,
    IngestStats,
    Plan,
    Progress,
    Source,
    content_hash,
    failure_reason,
)
from sparqlrag.extraction.provenance import (
    ChunkRecord,
    DocumentRecord,
    chunk_quads,
    merge_quads,
)
from sparqlrag.extraction.structure import placed, sections
from sparqlrag.extraction.updates import facts_count, placement, record_update, removal
from sparqlrag.library import librarian
from sparqlrag.library.files import Library, Upload
from sparqlrag.library.librarian import CollectionBusy
from sparqlrag.library.locks import Locks
from sparqlrag.models.embedder import Embedder
from sparqlrag.store import vocab
from sparqlrag.store.base import QuadStore, StoreError
from sparqlrag.store.sparql_text import insert_data, sparql_term
from sparqlrag.store.vocab import Iris
from sparqlrag.threads import off_loop

log = logging.getLogger("sparqlrag.ingest")
REPAIR_ROUNDS = 3  # writing documents again after a merge changed may change merges again; it settles in one


class Pipeline:
    def __init__(
        self,
        *,
        store: QuadStore,
        indexer: Indexer,
        library: Library,
        extractions: Extractions,
        locks: Locks,
        embedder: Embedder,
        extractor: Extractor,
        chunk_size: int = 2000,
        chunk_overlap: int = 100,
        concurrency: int = 4,
        extractor_for: Callable[[Iris], Awaitable[Extractor | None]] | None = None,
        resolution: bool = True,
        decoder: DecodePool,
    ) -> None:
        """The parts come built and shared (services.py builds them all): the indexes through
        `indexer`, the kept bytes and extraction cache through `library` and `extractions`."""
        self.store, self.indexer, self.library, self.extractions = store, indexer, library, extractions
        self.locks, self.embedder, self.extractor = locks, embedder, extractor
        self.extractor_for = extractor_for  # a collection's own extractor (its ontology's), if it has one
        self.resolution = resolution  # off: every spelling is its own entity, as extracted
        self.chunk_size, self.chunk_overlap, self.concurrency = chunk_size, chunk_overlap, concurrency
        self.decoder = decoder  # every document is decoded in a bounded process (decode_pool.py)
        self.stats = IngestStats()
        self._background: set[asyncio.Task[None]] = set()

    async def _update(self, *operations: str) -> None:
        """One SPARQL update request (one transaction) of the non-empty operations, under one prologue."""
        await off_loop(self.store.update, vocab.SPARQL_PREFIXES + " ;\n".join(op for op in operations if op))

    # -- ingest -------------------------------------------------------------------------------

    async def ingest(
        self,
        iris: Iris,
        document_id: str,
        data: bytes,
        *,
        media_type: str | None = None,
        filename: str | None = None,
        title: str | None = None,
        on_progress: Progress | None = None,
    ) -> IngestResult:
        """Add or update one document. Raises DecodeError (nothing written) for what is not a document."""
        source = Source(document_id, data, media_type, filename, title)
        (result,) = await self.ingest_many(iris, [source], on_progress=on_progress)
        if isinstance(result, Exception):
            raise result
        return result

    async def ingest_many(
        self,
        iris: Iris,
        sources: list[Source],
        *,
        on_progress: Progress | None = None,
        force: bool = False,
    ) -> list[IngestResult | Exception]:
        """Ingest documents together, in four phases: prepare each (decode, compare with what is
        stored, extract new chunks; concurrently), resolve their names (extraction/resolution.py),
        index them all at once (one embedding call and one upsert per kind: model calls cost far
        less per text in big batches), then commit each document in its own transaction. Each
        result is an IngestResult, or the exception that document raised; the others go on.
        `force` re-extracts every chunk, changed or not. Other documents that a new or lost merge
        affects are then written again (`resolve_again`). Raises UnknownCollection (nothing written)
        for a collection never created."""
        results, affected = await self._ingest_batch(iris, sources, on_progress, force, reuse=False)
        await self.resolve_again(iris, affected)
        return results

    async def _ingest_batch(
        self, iris: Iris, sources: list[Source], on_progress: Progress | None, force: bool, reuse: bool
    ) -> tuple[list[IngestResult | Exception], set[str]]:
        """`ingest_many` without the repair; also returns the documents the batch's merges affect."""
        ids = await self._batch(iris, sources)
        extractor = (await self.extractor_for(iris) if self.extractor_for else None) or self.extractor
        async with self.locks.documents(iris.collection, ids):
            progress, slots = ChunkProgress(on_progress, self.stats), asyncio.Semaphore(self.concurrency)
            try:
                results, committed = await self._ingest_all(iris, sources, slots, progress, force, extractor, reuse)
            finally:
                progress.close()
            self.stats.documents.update(r.status if isinstance(r, IngestResult) else "failed" for r in results)
        aliases = {m.alias_iri for done in committed for m in done.plan.resolution.merges if m.shared}
        lost, unnamed = {k for done in committed for k in done.lost}, {e for done in committed for e in done.unnamed}
        affected = await off_loop(resolver.documents_using, self.store, iris, aliases)
        affected |= await off_loop(resolver.documents_naming, self.store, iris, lost, unnamed)
        return results, affected

    async def resolve_again(self, iris: Iris, documents: set[str]) -> None:
        """Write again, from their kept extractions, the documents whose names a new or lost
        merge resolves differently now. A document the library holds no copy of (imported in
        a knowledge core) keeps its names, with a warning."""
        for _ in range(REPAIR_ROUNDS):
            if not documents:
                return
            sources = []
            for document_id in sorted(documents):
                try:
                    sources.append(await self.kept_source(iris, document_id))
                except LookupError as error:
                    log.warning("not resolved again: %s", error)
            if not sources:
                return
            try:
                results, documents = await self._ingest_batch(iris, sources, None, force=True, reuse=True)
            except (CollectionBusy, librarian.UnknownCollection) as error:  # the collection is being deleted
                log.warning("not resolved again: %s", error)
                return
            for source, result in zip(sources, results):
                if isinstance(result, Exception):
                    log.error(
                        "writing %r in %r again after a merge changed failed: %s",
                        source.document_id,
                        iris.collection,
                        result,
                    )
        if documents:
            log.warning(
                "merges in %r still changing after %d rounds; left: %s",
                iris.collection,
                REPAIR_ROUNDS,
                sorted(documents),
            )

    async def _ingest_all(
        self,
        iris: Iris,
        sources: list[Source],
        slots: asyncio.Semaphore,
        progress: ChunkProgress,
        force: bool,
        extractor: Extractor,
        reuse: bool,
    ) -> tuple[list[IngestResult | Exception], list[Committed]]:
        """The results, and the documents that were committed."""
        results: list[IngestResult | Exception | None] = [None] * len(sources)
        prepared = await asyncio.gather(
            *(self._prepare(iris, s, slots, progress, force, extractor, reuse) for s in sources), return_exceptions=True
        )
        plans: list[tuple[int, Plan]] = []
        for index, outcome in enumerate(prepared):
            if isinstance(outcome, Plan):
                plans.append((index, outcome))
            elif isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                raise outcome  # cancellation: markers stay, recover() resumes
            else:
                results[index] = outcome
        indexed, lost = Indexed(), False
        try:
            if self.resolution:
                resolved = await resolve_batch(
                    self.store, self.indexer.vectors, self.embedder, iris, [plan for _, plan in plans]
                )
                plans = [(index, plan) for (index, _), plan in zip(plans, resolved, strict=True)]
            chunks = [c for _, plan in plans for c in plan.added]
            await self.indexer.index(iris, chunks, [plan for _, plan in plans], indexed)
        except Exception as error:
            for index, plan in plans:
                results[index] = await self._failed(plan, error)
            plans, lost = [], bool(plans)
        committed = []
        for index, plan in plans:
            try:
                done = await self._commit(plan)
                results[index] = done.result
                committed.append(done)
            except Exception as error:
                results[index] = await self._failed(plan, error)
                lost = True
        if lost:
            await self._take_back(iris, indexed)
        return [result if result is not None else RuntimeError("not ingested") for result in results], committed

    async def _take_back(self, iris: Iris, indexed: Indexed) -> None:
        """Index rows of documents that failed after indexing: the store does not hold them."""
        try:
            removed = await self.indexer.take_back(iris, indexed)
        except Exception as error:  # the store is down too: a start's sweep finds them
            log.warning("index rows of failed documents in %r stay until the next start: %s", iris.collection, error)
            return
        if removed:
            log.info("removed the index rows of %d IRIs that failed documents left in %r", removed, iris.collection)

    async def _batch(self, iris: Iris, sources: list[Source]) -> list[str]:
        """The documents' ids, once the batch is known to be valid."""
        ids = [source.document_id for source in sources]
        if dotted := next((i for i in ids if i in (".", "..")), None):  # (in a URL it names a folder, not a document)
            raise ValueError(f"a document id may not be {dotted!r}")
        if len(set(ids)) != len(ids):
            raise ValueError("a batch names the same document twice")
        if not await off_loop(librarian.collection_exists, self.store, iris):
            raise librarian.UnknownCollection(iris.collection)
        return ids

    @staticmethod
    def _unchanged(existing: librarian.DocumentInfo | None, sha256: str, force: bool) -> IngestResult | None:
        if existing is not None and existing.sha256 == sha256 and existing.status == librarian.READY and not force:
            return IngestResult(existing.iri, "unchanged", chunks_kept=existing.chunks)
        return None

    async def submit(self, iris: Iris, sources: list[Source], *, force: bool = False) -> list[IngestResult]:
        """Accept documents to ingest in the background and return at once: each is decoded now
        (the first that is not a document raises DecodeError, nothing written), kept in the
        library, marked pending (a restart resumes it) and `queued`; unchanged ones come back
        `unchanged`. A background task ingests the rest; `wait_background()` awaits it."""
        ids = await self._batch(iris, sources)
        decoded = [await self._decode(source) for source in sources]  # all, before any write
        results, queued = [], []
        async with self.locks.documents(iris.collection, ids):
            for source, (text, sha256) in zip(sources, decoded):
                accepted = await self._accept(iris, source, text, sha256, force, librarian.QUEUED)
                if isinstance(accepted, IngestResult):
                    results.append(accepted)
                    continue
                results.append(IngestResult(accepted[0].iri.value, librarian.QUEUED))
                queued.append(replace(source, decoded=(text, sha256)))
        if queued:
            task = asyncio.create_task(self._ingest_in_background(iris, queued, force))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        return results

    async def _ingest_in_background(self, iris: Iris, sources: list[Source], force: bool) -> None:
        try:
            results = await self.ingest_many(iris, sources, force=force)
        except Exception as error:  # e.g. the collection was deleted meanwhile: pending markers stay for recover()
            log.error("background ingest into %r failed: %s", iris.collection, error)
            return
        for source, result in zip(sources, results):
            if isinstance(result, Exception):
                log.error("ingesting %r into %r failed: %s", source.document_id, iris.collection, result)

    async def wait_background(self) -> None:
        """Wait for the background ingests (tests, orderly shutdown)."""
        while self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

    async def cancel_background(self) -> None:
        """Stop background ingests; their pending markers let the next start resume them."""
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    async def _accept(
        self, iris: Iris, source: Source, decoded: Decoded, sha256: str, force: bool, status: str
    ) -> IngestResult | tuple[DocumentRecord, datetime, Path]:
        """Compare with the stored version: `unchanged`, or the bytes kept in the library, the
        ingest marked pending, and the document recorded with `status`. Returns its record, when
        it was first created, and its pending marker."""
        existing = next(
            iter(await off_loop(librarian.documents, self.store, iris, iris.document(source.document_id))), None
        )
        if unchanged := self._unchanged(existing, sha256, force):
            return unchanged
        # (the kind it was read as: what /file serves it as, whatever a client writes in the store)
        upload = Upload(iris.collection, source.document_id, decoded.media_type, source.filename, source.title)
        marker = await off_loop(self.library.save, upload, source.data)
        record = source.record(iris, decoded, sha256)
        created = datetime.fromisoformat(existing.created) if existing else datetime.now(UTC)
        await self._update(record_update(iris, record, status, created, existing))
        return record, created, marker

    async def _prepare(
        self,
        iris: Iris,
        source: Source,
        slots: asyncio.Semaphore,
        progress: ChunkProgress,
        force: bool,
        extractor: Extractor,
        reuse: bool,
    ) -> Plan | IngestResult:
        """Decode, compare with the stored version, mark processing, extract the new chunks."""
        decoded, sha256 = await self._decode(source)
        accepted = await self._accept(iris, source, decoded, sha256, force, librarian.PROCESSING)
        if isinstance(accepted, IngestResult):
            return accepted
        doc = iris.document(source.document_id)
        accepted_plan = Plan(iris, *accepted, extractor, reuse=reuse)
        try:
            chunks: dict[str, ChunkRecord] = {}
            for index, piece in enumerate(await off_loop(self._pieces, decoded)):
                iri = iris.chunk(doc, piece.text)
                place = placed(decoded.spans, piece.offset, piece.offset + len(piece.text))
                chunks.setdefault(iri.value, ChunkRecord(doc, iri, index, piece.offset, piece.text, place))
            old = await off_loop(librarian.chunks_of, self.store, iris, doc)
            plan = replace(
                accepted_plan,
                added=[chunk for iri, chunk in chunks.items() if force or iri not in old],
                kept=[chunk for iri, chunk in chunks.items() if not force and iri in old],
                removed=sorted(old if force else old - chunks.keys()),
            )
            progress.expect(len(plan.added))
            prepare = getattr(plan.extractor, "prepare", None)  # batch work ahead of the chunks (ontology subsets)
            if prepare is not None and plan.added and not reuse:
                await prepare([chunk.text for chunk in plan.added])
            extracted = itertools.count(1)  # the document's chunks extracted so far, for its sr:progress
            extractions = (
                self._extract(plan, chunk, source.document_id, slots, progress, extracted) for chunk in plan.added
            )
            knowledge = list(await asyncio.gather(*extractions))
        except Exception as error:
            raise await self._failed(accepted_plan, error) from None
        return replace(plan, knowledge=knowledge)

    async def _decode(self, source: Source) -> tuple[Decoded, str]:
        """The document decoded, and its bytes' hash (as decoded before, when it was)."""
        if source.decoded is not None:
            return source.decoded
        decoded = await self.decoder.decode(source.data, source.media_type, source.filename)
        return decoded, await off_loop(content_hash, source.data)

    def _pieces(self, decoded: Decoded) -> list[Piece]:
        """The chunks' texts: each section of the document (its headings) split on its own."""
        ranges = sections(decoded.spans, len(decoded.text))
        return split(decoded.text, self.chunk_size, self.chunk_overlap, sections=ranges)

    async def _extract(
        self,
        plan: Plan,
        chunk: ChunkRecord,
        document_id: str,
        slots: asyncio.Semaphore,
        progress: ChunkProgress,
        extracted: Iterator[int],
    ) -> tuple[Knowledge, datetime, datetime]:
        async with slots:
            started = datetime.now(UTC)
            extractor, collection = plan.extractor, plan.iris.collection
            kept = None
            if plan.reuse:
                kept = await off_loop(
                    self.extractions.load, collection, chunk.iri.value, extractor.name, extractor.llm_name
                )
            result = kept if kept is not None else await extractor.extract(chunk.text, document_id)
            if kept is None:
                await off_loop(
                    self.extractions.save, collection, chunk.iri.value, extractor.name, extractor.llm_name, result
                )
            progress.step()
            done = next(extracted)
            # the document's sr:progress, every tenth of its chunks (extraction is ~90% of the work)
            if done * 10 // len(plan.added) > (done - 1) * 10 // len(plan.added):
                share = 0.9 * done / len(plan.added)
                await self._update(librarian.status_update(plan.iris, plan.record.iri, librarian.PROCESSING, share))
            return result, started, datetime.now(UTC)

    async def _commit(self, plan: Plan) -> Committed:
        """The document's change in one transaction; then the index rows of what it no longer has."""
        iris = plan.iris
        quads = merge_quads(iris, plan.resolution.merges)
        for chunk, (knowledge, started, ended) in zip(plan.added, plan.knowledge):
            quads += chunk_quads(
                iris, chunk, knowledge, plan.extractor.name, plan.extractor.llm_name, started, ended, plan.resolution
            )
        candidates, named = await off_loop(resolver.statements_of, self.store, iris, plan.removed)
        merges = await off_loop(resolver.shared_merges_of, self.store, iris, plan.removed)
        await self._update(
            removal(iris, plan.removed, candidates),
            placement(iris, plan.kept),
            record_update(iris, plan.record, librarian.READY, plan.created, plan.record),
            insert_data(quads),
            facts_count(iris, plan.record.iri),
        )
        readded = {chunk.iri.value for chunk in plan.added}  # (forced: same IRIs, rows just rewritten)
        dropped = [iri for iri in plan.removed if iri not in readded]
        lost, unnamed = await self.indexer.forget(iris, dropped, named, candidates, merges)
        plan.marker.unlink(missing_ok=True)  # (a killed ingest keeps its marker: recover() resumes it)
        # (what `documents` and the library show: the facts all its chunks support, counted in the update)
        facts = await off_loop(librarian.facts_of, self.store, iris, plan.record.iri) or 0
        added, removed, kept = len(plan.added), len(plan.removed), len(plan.kept)
        done = IngestResult(plan.record.iri.value, librarian.READY, added, removed, kept, facts)
        return Committed(plan, done, lost, unnamed)

    async def _failed(self, plan: Plan, error: Exception) -> Exception:
        """Mark the document failed; a reported failure is not retried at every start. When
        the store cannot take even that (it is down, its disk is full), the marker stays and
        the next start resumes the document; the error returned is still the first one."""
        log.warning("ingesting %s failed: %r", plan.record.iri.value, error)
        if await self.record_failed(plan.iris, plan.record.iri, failure_reason(error)):
            plan.marker.unlink(missing_ok=True)
        return error

    async def record_failed(self, iris: Iris, document: NamedNode, reason: str | None = None) -> bool:
        """The document's status `failed` (and why); False (and logged) when the store cannot take even that."""
        try:
            await self._update(librarian.status_update(iris, document, librarian.FAILED, reason=reason))
        except StoreError as unrecorded:
            log.warning("%s stays pending (its failure could not be recorded: %s)", document.value, unrecorded)
            return False
        return True

    # -- delete ------------------------------------------------------------------------------

    async def forget(self, iris: Iris, document_id: str) -> bool:
        """Delete a document: its chunks, the facts only it supported, their index rows; then
        write again the documents whose names a merge it alone supported resolved. False if unknown."""
        doc = iris.document(document_id)
        async with self.locks.documents(iris.collection, [document_id]):
            if not await off_loop(librarian.documents, self.store, iris, doc):
                return False
            chunks = sorted(await off_loop(librarian.chunks_of, self.store, iris, doc))
            statements, named = await off_loop(resolver.statements_of, self.store, iris, chunks)
            merges = await off_loop(resolver.shared_merges_of, self.store, iris, chunks)
            src = sparql_term(iris.source_graph)
            mark = await off_loop(self.library.begin, "forget", iris.collection)  # killed before the end: swept
            await self._update(
                removal(iris, chunks, statements),
                f"DELETE WHERE {{ GRAPH {src} {{ {sparql_term(doc)} ?p ?o }} }}",
            )
            lost, unnamed = await self.indexer.forget(iris, chunks, named, statements, merges)
            await off_loop(self.library.discard, iris.collection, document_id)
            mark.unlink()
            affected = await off_loop(resolver.documents_naming, self.store, iris, lost, unnamed)
        await self.resolve_again(iris, affected)
        return True

    async def kept_source(self, iris: Iris, document_id: str) -> Source:
        """The document as the library kept it, to extract again (after changing the extractor,
        its model or its prompts) with `ingest_many(..., force=True)` or `submit(..., force=True)`.
        Raises LookupError for a document the library does not hold."""
        upload, data = await off_loop(self.library.load, iris.collection, document_id)
        return Source(document_id, data, upload.media_type, upload.filename, upload.title)
