"""Ingesting and forgetting documents, with provenance, indexes and crash safety.

One document's change reaches the store in one SPARQL update (one transaction): the
chunks that vanished leave with the facts only they supported, new chunks arrive with their
facts, and the document turns `ready`. Before that, vectors and keyword rows are written;
they are keyed by IRI, so writing them twice is harmless, and retrieval only trusts chunks
the store knows.

Chunks are named by their content, so re-ingesting changed text extracts only the chunks
whose text changed; unchanged content is a no-op. Before processing, the upload is saved
under `work_dir/pending/`; if the process dies (kill -9), `recover()` finds it there and
ingests it again, so a document is either in its old state, or fully in its new one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pyoxigraph import Literal, NamedNode, Quad

from sparqlrag.extraction import librarian
from sparqlrag.extraction.chunker import split
from sparqlrag.extraction.decoders import decode
from sparqlrag.extraction.knowledge import Extractor, Knowledge
from sparqlrag.extraction.provenance import ChunkRecord, DocumentRecord, chunk_quads, document_quads
from sparqlrag.models.embedder import Embedder
from sparqlrag.store import vocab as v
from sparqlrag.store.keyword_index import KeywordIndex
from sparqlrag.store.select import select
from sparqlrag.store.sparql_text import insert_data, sparql_term, values
from sparqlrag.store.vector_index import VectorIndex
from sparqlrag.store.vocab import Iris

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class IngestResult:
    document: str
    status: str  # "ready" or "unchanged"
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_kept: int = 0
    facts: int = 0


@dataclass(frozen=True)
class Upload:
    """What re-running an interrupted ingest needs besides the bytes."""

    collection: str
    document_id: str
    media_type: str | None
    filename: str | None
    title: str | None


class Pipeline:
    def __init__(
        self,
        *,
        store: Any,
        vectors: VectorIndex,
        keywords: KeywordIndex,
        embedder: Embedder,
        extractor: Extractor,
        base_iri: str,
        work_dir: Path,
        chunk_size: int = 2000,
        chunk_overlap: int = 100,
        concurrency: int = 4,
    ) -> None:
        self.store, self.vectors, self.keywords, self.embedder = store, vectors, keywords, embedder
        self.extractor, self.base_iri = extractor, base_iri
        self.pending_dir = work_dir / "pending"
        self.chunk_size, self.chunk_overlap, self.concurrency = chunk_size, chunk_overlap, concurrency
        self._document_locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def _store(self, method: str, *args: Any) -> Any:
        return await asyncio.to_thread(getattr(self.store, method), *args)

    async def _update(self, *operations: str) -> None:
        """One SPARQL update request (one transaction) of the non-empty operations, under one prologue."""
        await self._store("update", v.SPARQL_PREFIXES + " ;\n".join(op for op in operations if op))

    def _lock(self, collection: str, document_id: str) -> asyncio.Lock:
        return self._document_locks.setdefault((collection, document_id), asyncio.Lock())

    # -- ingest -------------------------------------------------------------------------------

    async def ingest(
        self, collection: str, document_id: str, data: bytes, *, media_type: str | None = None,
        filename: str | None = None, title: str | None = None, on_progress: Progress | None = None,
    ) -> IngestResult:  # fmt: skip
        """Add or update a document. Raises DecodeError (nothing written) for what is not a document."""
        iris = Iris(self.base_iri, collection)
        decoded = decode(data, media_type, filename)
        sha256 = hashlib.sha256(data).hexdigest()
        doc = iris.document(document_id)
        async with self._lock(collection, document_id):
            (existing,) = (await asyncio.to_thread(librarian.documents, self.store, iris, doc)) or [None]
            if existing is not None and existing.sha256 == sha256 and existing.status == librarian.READY:
                return IngestResult(doc.value, "unchanged", chunks_kept=existing.chunks)
            marker = self._save_pending(Upload(collection, document_id, media_type, filename, title), data)
            record = DocumentRecord(doc, title or decoded.title or filename or document_id, filename or document_id,
                                    decoded.media_type, sha256)  # fmt: skip
            created = datetime.fromisoformat(existing.created) if existing else datetime.now(timezone.utc)
            await self._update(self._record_update(iris, record, librarian.PROCESSING, created, existing))
            try:
                result = await self._process(iris, record, created, decoded.text, on_progress)
            except Exception:
                await self._update(librarian.status_update(iris, doc, librarian.FAILED))
                self._clear_pending(marker)  # a failure is reported, not retried at every start
                raise
            self._clear_pending(marker)  # (a cancelled ingest keeps its marker: recover() resumes it)
            return result

    async def _process(
        self, iris: Iris, record: DocumentRecord, created: datetime, text: str, on_progress: Progress | None
    ) -> IngestResult:
        chunks: dict[str, ChunkRecord] = {}
        for index, piece in enumerate(split(text, self.chunk_size, self.chunk_overlap)):
            iri = iris.chunk(record.iri, piece.text)
            chunks.setdefault(iri.value, ChunkRecord(record.iri, iri, index, piece.offset, piece.text))
        old = await asyncio.to_thread(librarian.chunks_of, self.store, iris, record.iri)
        added = [chunk for iri, chunk in chunks.items() if iri not in old]
        kept = [chunk for iri, chunk in chunks.items() if iri in old]
        removed = sorted(old - chunks.keys())

        knowledge = await self._extract_all(added, record.iri.value.rsplit("/", 1)[-1], on_progress)
        quads = []
        for chunk, (result, started, ended) in zip(added, knowledge):
            quads += chunk_quads(iris, chunk, result, self.extractor.name, self.extractor.model, started, ended)
        await self._index(iris, added, [k for k, _, _ in knowledge])

        candidates, named = await self._statements_of(iris, removed)
        await self._update(
            self._removal(iris, removed, candidates),
            self._placement(iris, kept),
            self._record_update(iris, record, librarian.READY, created, record),
            insert_data(quads),
        )
        await self._forget_index_rows(iris, removed, named)
        facts = sum(len(result.facts) for result, _, _ in knowledge)
        return IngestResult(record.iri.value, librarian.READY, len(added), len(removed), len(kept), facts)

    async def _extract_all(
        self, chunks: list[ChunkRecord], document_id: str, on_progress: Progress | None
    ) -> list[tuple[Knowledge, datetime, datetime]]:
        slots, done = asyncio.Semaphore(self.concurrency), 0

        async def one(chunk: ChunkRecord) -> tuple[Knowledge, datetime, datetime]:
            nonlocal done
            async with slots:
                started = datetime.now(timezone.utc)
                result = await self.extractor.extract(chunk.text, document_id)
                done += 1
                if on_progress is not None:
                    on_progress(done, len(chunks))
                return result, started, datetime.now(timezone.utc)

        return list(await asyncio.gather(*(one(chunk) for chunk in chunks)))

    async def _index(self, iris: Iris, chunks: list[ChunkRecord], knowledge: list[Knowledge]) -> None:
        """Chunk vectors and keyword rows, and vectors of the entities those chunks name."""
        if chunks:
            texts = [c.text for c in chunks]
            vectors = await asyncio.to_thread(self.embedder.embed, texts)
            payloads = [{"document": c.document.value, "text": c.text} for c in chunks]
            await asyncio.to_thread(self.vectors.upsert, iris.collection, "chunks", [c.iri.value for c in chunks], vectors, payloads)
            await asyncio.to_thread(self.keywords.add, iris.collection, [(c.iri.value, c.text) for c in chunks])
        entities = {e.name: e for result in knowledge for e in result.entities}
        for result in knowledge:
            for fact in result.facts:
                for name in (fact.subject, fact.object) if fact.object_entity else (fact.subject,):
                    entities.setdefault(name, None)  # type: ignore[arg-type]
        if entities:
            names = list(entities)
            vectors = await asyncio.to_thread(self.embedder.embed, names)
            payloads = [{"label": n, "definition": (entities[n].definition if entities[n] else None)} for n in names]
            await asyncio.to_thread(self.vectors.upsert, iris.collection, "entities", [iris.entity(n).value for n in names], vectors, payloads)

    # -- removal ------------------------------------------------------------------------------

    async def _statements_of(self, iris: Iris, chunks: list[str]) -> tuple[list[str], set[str]]:
        """Statements derived from `chunks`, and the entities their facts name."""
        if not chunks:
            return [], set()
        rows = await asyncio.to_thread(select, self.store, v.SPARQL_PREFIXES + f"""
            SELECT DISTINCT ?st ?s ?o WHERE {{ {values("chunk", map(NamedNode, chunks))}
              GRAPH {sparql_term(iris.source_graph)} {{ ?st prov:wasDerivedFrom ?chunk ; rdf:reifies <<( ?s ?p ?o )>> }} }}""")  # fmt: skip
        prefix = iris.entity("").value
        entities = {term for row in rows for term in (row["s"], row["o"]) if term.startswith(prefix)}
        return sorted({row["st"] for row in rows}), entities

    @staticmethod
    def _removal(iris: Iris, chunks: list[str], statements: list[str]) -> str:
        """Drop the chunks' derivations; then statements left with none take their fact along."""
        if not chunks:
            return ""
        src, kg = sparql_term(iris.source_graph), sparql_term(iris.knowledge_graph)
        chunk_values = values("chunk", map(NamedNode, chunks))
        ops = [
            f"DELETE {{ GRAPH {src} {{ ?st prov:wasDerivedFrom ?chunk }} }} WHERE {{ {chunk_values} GRAPH {src} {{ ?st prov:wasDerivedFrom ?chunk }} }}",
            f"DELETE {{ GRAPH {src} {{ ?chunk ?p ?o . ?activity ?q ?r }} }} WHERE {{ {chunk_values} GRAPH {src} {{ "
            f"{{ ?chunk ?p ?o }} UNION {{ ?activity prov:used ?chunk ; ?q ?r }} }} }}",
        ]
        if statements:
            ops.append(
                f"DELETE {{ GRAPH {kg} {{ ?s ?p ?o }} GRAPH {src} {{ ?st ?x ?y }} }} WHERE {{ "
                f"{values('st', map(NamedNode, statements))} GRAPH {src} {{ ?st rdf:reifies <<( ?s ?p ?o )>> ; ?x ?y "
                f"FILTER NOT EXISTS {{ ?st prov:wasDerivedFrom ?any }} }} }}"
            )
        return " ;\n".join(ops)

    @staticmethod
    def _placement(iris: Iris, chunks: list[ChunkRecord]) -> str:
        """Kept chunks may move within the new text: refresh their offset and index."""
        if not chunks:
            return ""
        src = sparql_term(iris.source_graph)
        return (
            f"DELETE {{ GRAPH {src} {{ ?chunk sr:offset ?o ; sr:index ?i }} }} WHERE {{ "
            f"{values('chunk', [c.iri for c in chunks])} GRAPH {src} {{ ?chunk sr:offset ?o ; sr:index ?i }} }} ;\n"
            + insert_data(
                Quad(c.iri, predicate, Literal(value), iris.source_graph)
                for c in chunks for predicate, value in ((v.SR_OFFSET, c.offset), (v.SR_INDEX, c.index))
            )
        )  # fmt: skip

    @staticmethod
    def _record_update(iris: Iris, record: DocumentRecord, status: str, created: datetime, existing: object) -> str:
        """Replace the document's own triples (title, hash, status...) in the source graph."""
        src, doc = sparql_term(iris.source_graph), sparql_term(record.iri)
        clear = f"DELETE WHERE {{ GRAPH {src} {{ {doc} ?p ?o }} }} ;\n" if existing is not None else ""
        return clear + insert_data(document_quads(iris, record, status, created))

    async def _forget_index_rows(self, iris: Iris, chunks: list[str], entities: set[str]) -> None:
        """Index rows of removed chunks, and vectors of entities that lost their last label."""
        if chunks:
            await asyncio.to_thread(self.vectors.delete, iris.collection, "chunks", chunks)
            await asyncio.to_thread(self.keywords.delete, iris.collection, chunks)
        if entities:
            rows = await asyncio.to_thread(select, self.store, v.SPARQL_PREFIXES + f"""
                SELECT ?entity WHERE {{ {values("entity", map(NamedNode, sorted(entities)))}
                  FILTER NOT EXISTS {{ GRAPH {sparql_term(iris.knowledge_graph)} {{ ?entity rdfs:label ?label }} }} }}""")  # fmt: skip
            await asyncio.to_thread(self.vectors.delete, iris.collection, "entities", [row["entity"] for row in rows])

    # -- delete and recover -------------------------------------------------------------------

    async def forget(self, collection: str, document_id: str) -> bool:
        """Delete a document: its chunks, the facts only it supported, their index rows. False if unknown."""
        iris = Iris(self.base_iri, collection)
        doc = iris.document(document_id)
        async with self._lock(collection, document_id):
            if not await asyncio.to_thread(librarian.documents, self.store, iris, doc):
                return False
            chunks = sorted(await asyncio.to_thread(librarian.chunks_of, self.store, iris, doc))
            statements, named = await self._statements_of(iris, chunks)
            src = sparql_term(iris.source_graph)
            await self._update(
                self._removal(iris, chunks, statements), f"DELETE WHERE {{ GRAPH {src} {{ {sparql_term(doc)} ?p ?o }} }}"
            )
            await self._forget_index_rows(iris, chunks, named)
            return True

    def _marker(self, collection: str, document_id: str) -> Path:
        return self.pending_dir / (hashlib.sha1(f"{collection}/{document_id}".encode()).hexdigest() + ".json")

    def _save_pending(self, upload: Upload, data: bytes) -> Path:
        marker = self._marker(upload.collection, upload.document_id)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.with_suffix(".bin").write_bytes(data)
        marker.write_text(json.dumps(asdict(upload)))  # written last: a marker always has its bytes
        return marker

    @staticmethod
    def _clear_pending(marker: Path) -> None:
        marker.unlink(missing_ok=True)
        marker.with_suffix(".bin").unlink(missing_ok=True)

    async def recover(self) -> list[IngestResult]:
        """Finish the ingests a previous process did not (it was killed): ingest them again."""
        results = []
        for marker in sorted(self.pending_dir.glob("*.json")) if self.pending_dir.is_dir() else []:
            upload = Upload(**json.loads(marker.read_text()))
            data = marker.with_suffix(".bin").read_bytes()
            results.append(await self.ingest(upload.collection, upload.document_id, data, media_type=upload.media_type,
                                             filename=upload.filename, title=upload.title))  # fmt: skip
        return results

