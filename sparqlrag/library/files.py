"""The on-disk library: each document's uploaded bytes, kept to extract again, and the pending
markers of ingests not finished yet, which the next start resumes.

    {work_dir}/library/{collection}/{sha1(document id)}.bin   the bytes
    {work_dir}/library/{collection}/{sha1(document id)}.json  the Upload (how to decode them)
    {work_dir}/pending/{sha1(collection/document id)}.json    the Upload of an unfinished ingest
    {work_dir}/pending/writes/{what}-{uuid}.json              a write of several steps under way
"""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Upload:
    """What ingesting a document's bytes again needs (after a crash, or to re-extract)."""

    collection: str
    document_id: str
    media_type: str | None
    filename: str | None
    title: str | None


class Library:
    def __init__(self, work_dir: Path) -> None:
        self.library_dir, self.pending_dir = work_dir / "library", work_dir / "pending"
        self.writes_dir = self.pending_dir / "writes"

    def _entry(self, collection: str, document_id: str) -> Path:
        return self.library_dir / collection / hashlib.sha1(document_id.encode()).hexdigest()

    def _marker(self, collection: str, document_id: str) -> Path:
        return self.pending_dir / (hashlib.sha1(f"{collection}/{document_id}".encode()).hexdigest() + ".json")

    def save(self, upload: Upload, data: bytes) -> Path:
        """Keep the bytes, then mark the ingest pending; returns the marker (unlinked when done)."""
        entry = self._entry(upload.collection, upload.document_id)
        entry.parent.mkdir(parents=True, exist_ok=True)
        write_whole(entry.with_suffix(".bin"), data)
        write_whole(entry.with_suffix(".json"), json.dumps(asdict(upload)).encode())
        marker = self._marker(upload.collection, upload.document_id)
        marker.parent.mkdir(parents=True, exist_ok=True)
        write_whole(marker, json.dumps(asdict(upload)).encode())  # written last: a marker always has its bytes
        return marker

    def load(self, collection: str, document_id: str) -> tuple[Upload, bytes]:
        """Raises LookupError for a document the library does not hold."""
        upload, path = self.original(collection, document_id)
        try:
            return upload, path.read_bytes()
        except FileNotFoundError:
            raise self._missing(collection, document_id) from None

    def original(self, collection: str, document_id: str) -> tuple[Upload, Path]:
        """How the document was uploaded (its media type the one it was read as) and where its
        bytes are; LookupError for a document the library does not hold."""
        entry = self._entry(collection, document_id)
        try:
            return Upload(**json.loads(entry.with_suffix(".json").read_text())), entry.with_suffix(".bin")
        except FileNotFoundError:
            raise self._missing(collection, document_id) from None

    @staticmethod
    def _missing(collection: str, document_id: str) -> LookupError:
        return LookupError(f"the library holds no copy of document {document_id!r} in collection {collection!r}")

    def discard(self, collection: str, document_id: str) -> None:
        entry = self._entry(collection, document_id)
        for path in (entry.with_suffix(".bin"), entry.with_suffix(".json"), self._marker(collection, document_id)):
            path.unlink(missing_ok=True)

    def discard_collection(self, collection: str) -> None:
        """The library, pending markers and write marks of a deleted collection."""
        shutil.rmtree(self.library_dir / collection, ignore_errors=True)
        marks = sorted(self.writes_dir.glob("*.json")) if self.writes_dir.is_dir() else []
        for marker in self.markers() + marks:
            try:
                if json.loads(marker.read_text()).get("collection") == collection:
                    marker.unlink(missing_ok=True)
            except (OSError, ValueError, AttributeError):
                continue

    def begin(self, what: str, collection: str, **details: object) -> Path:
        """Mark a write of several steps begun (the store, then the indexes): the caller unlinks
        the mark once every step is done. A process killed part-way leaves it, and the next start
        repairs the collection (Pipeline.sweep_crashed, Cores.undo_interrupted)."""
        mark = self.writes_dir / f"{what}-{uuid.uuid4().hex}.json"
        mark.parent.mkdir(parents=True, exist_ok=True)
        write_whole(mark, json.dumps({"collection": collection, **details}).encode())
        return mark

    def begun(self, what: str) -> list[tuple[Path, dict[str, Any]]]:
        """The marks of `what` left by a killed process, with their details. One that cannot be
        read names nothing to repair, and goes."""
        found = []
        for mark in sorted(self.writes_dir.glob(f"{what}-*.json")) if self.writes_dir.is_dir() else []:
            try:
                details = json.loads(mark.read_text())
                if isinstance(details, dict) and isinstance(details.get("collection"), str):
                    found.append((mark, details))
                    continue
            except (OSError, ValueError):
                pass
            mark.unlink(missing_ok=True)
        return found

    def markers(self) -> list[Path]:
        """The pending markers, in a stable order."""
        return sorted(self.pending_dir.glob("*.json")) if self.pending_dir.is_dir() else []

    @staticmethod
    def pending(marker: Path) -> Upload:
        """What a marker says is unfinished. Raises OSError, ValueError, TypeError when it is damaged."""
        return Upload(**json.loads(marker.read_text()))


def write_whole(path: Path, data: bytes) -> None:
    """`path` holds `data` whole, or what it held before: a process killed mid-write (or a full
    disk) leaves no truncated marker or copy, only a stray temporary file."""
    written = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        written.write_bytes(data)
        written.replace(path)
    except BaseException:
        written.unlink(missing_ok=True)
        raise
