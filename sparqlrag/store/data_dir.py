"""The data directory: the RocksDB store, scratch space, and the settings pinned at creation."""

from __future__ import annotations

import json
from pathlib import Path

from sparqlrag.store.base import StoreError

META_FILE = "sparqlrag.json"


class BaseIriChanged(StoreError):
    """The data directory was created with another base IRI; entity IRIs would stop resolving."""


def is_data_dir(data_dir: Path) -> bool:
    """Whether `data_dir` holds anything (a store, a library, its pinned settings): a command
    that only reads has something to read there."""
    return data_dir.is_dir() and any(data_dir.iterdir())


def pinned_base_iri(data_dir: Path) -> str | None:
    """The base IRI the data directory was created with (none for a new directory): commands
    that are not told one use it, so the IRIs it minted keep resolving."""
    meta_path = data_dir / META_FILE
    if not meta_path.is_file():
        return None
    try:
        pinned = json.loads(meta_path.read_text(encoding="utf-8")).get("base_iri")
    except (ValueError, AttributeError):  # not JSON, not UTF-8, or not an object
        raise StoreError(
            f'{meta_path} is not the JSON object sparqlrag writes there ({{"base_iri": ...}}): mend it, '
            "or move the data directory aside"
        ) from None
    return pinned if isinstance(pinned, str) and pinned else None


def prepare_data_dir(data_dir: Path, base_iri: str) -> None:
    """Create the directory on first use and pin its base IRI; refuse a silent change later."""
    data_dir.mkdir(parents=True, exist_ok=True)
    meta_path = data_dir / META_FILE
    if meta_path.exists():
        pinned = pinned_base_iri(data_dir)
        if pinned and pinned != base_iri:
            raise BaseIriChanged(
                f"{data_dir} was created with base IRI {pinned}, not {base_iri}: its entity IRIs are "
                f"minted under {pinned}. Run with --base-iri {pinned} (or SPARQLRAG_BASE_IRI), or "
                "use a new data directory"
            )
        return
    meta_path.write_text(json.dumps({"base_iri": base_iri}, indent=2) + "\n")


def scratch_dir(data_dir: Path) -> Path:
    return data_dir / "tmp"
