"""What each chunk's extraction returned, kept beside the library's copy of its document.

Writing a document again after resolution changed (a merge appeared, or lost its evidence)
must not read it again with an LLM: the pipeline resolves the kept extractions instead. An
entry is used only for the same chunk text, extractor and model.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

from sparqlrag.extraction.knowledge import Entity, Fact, Knowledge


class Extractions:
    def __init__(self, library_dir: Path) -> None:
        self.library_dir = library_dir

    def _path(self, collection: str, chunk: str) -> Path:
        return self.library_dir / collection / "extractions" / (hashlib.sha1(chunk.encode()).hexdigest() + ".json")

    def save(self, collection: str, chunk: str, extractor: str, llm_name: str | None, knowledge: Knowledge) -> None:
        path = self._path(collection, chunk)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"extractor": extractor, "model": llm_name, "knowledge": asdict(knowledge)}))

    def load(self, collection: str, chunk: str, extractor: str, llm_name: str | None) -> Knowledge | None:
        """The kept extraction of the chunk by this extractor and LLM, if there is one."""
        try:
            kept = json.loads(self._path(collection, chunk).read_text())
        except (OSError, ValueError):
            return None
        if (kept.get("extractor"), kept.get("model")) != (extractor, llm_name):
            return None
        found = kept["knowledge"]
        return Knowledge(
            [Entity(**e) for e in found["entities"]],
            [Fact(**f) for f in found["facts"]],
            found["rejected"],
            found["ontology"],
            [tuple(pair) for pair in found.get("aliases", [])],
        )

    def discard(self, collection: str, chunks: list[str]) -> None:
        for chunk in chunks:
            self._path(collection, chunk).unlink(missing_ok=True)
