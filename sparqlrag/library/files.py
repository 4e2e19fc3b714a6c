"""The on-disk library: each document's uploaded bytes, kept to extract again, and the pending
markers of ingests not finished yet, which the next start resumes.

    {work_dir}/library/{collection}/{sha1(document id)}.bin   the bytes
    {work_dir}/library/{collection}/{sha1(document id)}.json  the Upload (how to decode them)
    {work_dir}/pending/{sha1(collection/document id)}.json    the Upload of an unfinished ingest
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path


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

    def _entry(self, collection: str, document_id: str) -> Path:
        return self.library_dir / collection / hashlib.sha1(document_id.encode()).hexdigest()

    def _marker(self, collection: str, document_id: str) -> Path:
        return self.pending_dir / (hashlib.sha1(f"{collection}/{document_id}".encode()).hexdigest() + ".json")

    def save(self, upload: Upload, data: bytes) -> Path:
        """Keep the bytes, then mark the ingest pending; returns the marker (unlinked when done)."""
        entry = self._entry(upload.collection, upload.document_id)
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.with_suffix(".bin").write_bytes(data)
        entry.with_suffix(".json").write_text(json.dumps(asdict(upload)))
        marker = self._marker(upload.collection, upload.document_id)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps(asdict(upload)))  # written last: a marker always has its bytes
        return marker

    def load(self, collection: str, document_id: str) -> tuple[Upload, bytes]:
        """Raises LookupError for a document the library does not hold."""
        entry = self._entry(collection, document_id)
        try:
            return Upload(**json.loads(entry.with_suffix(".json").read_text())), entry.with_suffix(".bin").read_bytes()
        except FileNotFoundError:
            raise LookupError(
                f"the library holds no copy of document {document_id!r} in collection {collection!r}"
            ) from None

    def discard(self, collection: str, document_id: str) -> None:
        entry = self._entry(collection, document_id)
        for path in (entry.with_suffix(".bin"), entry.with_suffix(".json"), self._marker(collection, document_id)):
            path.unlink(missing_ok=True)

    def discard_collection(self, collection: str) -> None:
        """The library and pending markers of a deleted collection."""
        shutil.rmtree(self.library_dir / collection, ignore_errors=True)
        for marker in self.markers():
            try:
                if json.loads(marker.read_text()).get("collection") == collection:
                    marker.unlink(missing_ok=True)
            except (OSError, ValueError):
                continue

    def markers(self) -> list[Path]:
        """The pending markers, in a stable order."""
        return sorted(self.pending_dir.glob("*.json")) if self.pending_dir.is_dir() else []

    @staticmethod
    def pending(marker: Path) -> Upload:
        """What a marker says is unfinished. Raises OSError, ValueError, TypeError when it is damaged."""
        return Upload(**json.loads(marker.read_text()))
