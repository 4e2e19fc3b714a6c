"""What one ingest carries: the documents in (Source), the results out (IngestResult), each
document's state between the pipeline's phases (Plan), and its progress and counts."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sparqlrag.extraction.decoders import Decoded, DecodeError
from sparqlrag.extraction.knowledge import Extractor, Knowledge
from sparqlrag.extraction.provenance import ChunkRecord, DocumentRecord
from sparqlrag.extraction.resolution import Resolution
from sparqlrag.models.llm import LLMError
from sparqlrag.store.base import StoreError
from sparqlrag.store.vocab import Iris

Progress = Callable[[int, int], None]
"""Called with (chunks extracted, chunks to extract) as an ingest goes."""


@dataclass(frozen=True)
class IngestResult:
    document: str
    status: str  # "ready", "unchanged", or "queued" (accepted by submit)
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_kept: int = 0
    facts: int = 0  # the facts its chunks support, names and definitions aside (what `documents` lists)


@dataclass(frozen=True)
class Source:
    """A document to ingest."""

    document_id: str
    data: bytes
    media_type: str | None = None
    filename: str | None = None
    title: str | None = None
    decoded: tuple[Decoded, str] | None = field(default=None, compare=False, repr=False)
    """The text and the bytes' hash, when a step before has decoded it (an accepted upload): never twice."""

    def record(self, iris: Iris, decoded: Decoded, sha256: str) -> DocumentRecord:
        """The document as the store records it, once decoded."""
        title = self.title or decoded.title or self.filename or self.document_id
        return DocumentRecord(
            iris.document(self.document_id),
            title,
            self.filename or self.document_id,
            decoded.media_type,
            sha256,
            decoded.pages,
        )


@dataclass(frozen=True)
class Plan:
    """One document between the phases of ingest_many: each phase hands on a new one (prepare
    makes it, batch resolution adds the resolution, commit reads it)."""

    iris: Iris
    record: DocumentRecord
    created: datetime
    marker: Path
    extractor: Extractor
    reuse: bool = False  # resolve the kept extractions rather than extracting again
    added: list[ChunkRecord] = field(default_factory=list)
    kept: list[ChunkRecord] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    knowledge: list[tuple[Knowledge, datetime, datetime]] = field(default_factory=list)
    resolution: Resolution = field(default_factory=Resolution)

    def chunks(self) -> list[tuple[str, str, Knowledge]]:
        return [
            (chunk.iri.value, chunk.text, knowledge) for chunk, (knowledge, _, _) in zip(self.added, self.knowledge)
        ]


@dataclass(frozen=True)
class Committed:
    """A document's plan once committed, and what its commit changed for the others: the keys
    of shared merges it removed and the entities it left without a name of their own."""

    plan: Plan
    result: IngestResult
    lost: set[str]
    unnamed: set[str]


def failure_reason(error: Exception) -> str:
    """Why a document failed, as the library shows it: in our words, never an exception's text
    (which may carry another server's reply); the server's log has the rest."""
    if isinstance(error, (DecodeError, LLMError)):  # (an LLMError's message is ours: it names the status only)
        return str(error)
    if isinstance(error, StoreError):
        return "the store could not take the document's changes"
    if isinstance(error, TimeoutError):
        return "extraction took too long"
    return f"extraction failed ({type(error).__name__}); the server's log has the details"


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class IngestStats:
    """Counts since the pipeline started, for /metrics: documents by outcome ("ready",
    "unchanged", "failed"), chunks extracted, and chunks of running ingests still to extract."""

    documents: Counter[str] = field(default_factory=Counter)
    chunks_extracted: int = 0
    pending: int = 0


class ChunkProgress:
    """Chunks extracted so far, out of the chunks known to need extraction so far."""

    def __init__(self, callback: Progress | None, stats: IngestStats) -> None:
        self.callback, self.stats, self.done, self.total = callback, stats, 0, 0

    def expect(self, chunks: int) -> None:
        self.total += chunks
        self.stats.pending += chunks

    def step(self) -> None:
        self.done += 1
        self.stats.chunks_extracted += 1
        self.stats.pending -= 1
        if self.callback is not None:
            self.callback(self.done, self.total)

    def close(self) -> None:
        """What a failed ingest left unextracted is not pending any more."""
        self.stats.pending -= self.total - self.done
