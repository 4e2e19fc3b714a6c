"""Pre-extracted triples: one JSON object a line, {"passage_id", "entities", "triples"}.

The format of ../shared/data/musique100/triples.jsonl (OpenIE output). Each passage id names
a document ingested beside it; its facts come from the file instead of an extractor. The whole
file is validated before anything is used, and every problem names its line.
"""

from __future__ import annotations

import json
from pathlib import Path

from sparqlrag.extraction.knowledge import Entity, Fact, Knowledge


class TriplesFormatError(ValueError):
    """The file is not valid pre-extracted triples JSONL."""


def _passage(line_number: int, line: str) -> tuple[str, Knowledge]:
    where = f"line {line_number}"
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise TriplesFormatError(f"{where}: not JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(record, dict):
        raise TriplesFormatError(f"{where}: expected an object with passage_id, entities and triples")
    passage_id, entities, triples = record.get("passage_id"), record.get("entities", []), record.get("triples")
    if not isinstance(passage_id, str) or not passage_id:
        raise TriplesFormatError(f"{where}: 'passage_id' must be a non-empty string")
    if not isinstance(entities, list) or not all(isinstance(e, str) for e in entities):
        raise TriplesFormatError(f"{where}: 'entities' must be a list of strings")
    if not isinstance(triples, list):
        raise TriplesFormatError(f"{where}: 'triples' must be a list of [subject, predicate, object]")
    names = {" ".join(e.split()) for e in entities if e.strip()}
    facts, rejected = [], 0
    for triple in triples:
        if not (isinstance(triple, list) and len(triple) == 3 and all(isinstance(t, str) for t in triple)):
            raise TriplesFormatError(
                f"{where}: each triple must be [subject, predicate, object] strings, got {triple!r}"
            )
        subject, predicate, obj = (" ".join(t.split()) for t in triple)
        if subject and predicate and obj:
            facts.append(Fact(subject, predicate.lower(), obj, obj in names))
            names.add(subject)
        else:
            rejected += 1  # OpenIE output has the odd empty slot: skip it, count it
    return passage_id, Knowledge([Entity(name) for name in sorted(names)], facts, rejected)


def read_triples(path: Path) -> dict[str, Knowledge]:
    """Knowledge by passage id; raises TriplesFormatError naming the first bad line."""
    passages: dict[str, Knowledge] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise TriplesFormatError(f"{path.name} is not UTF-8 text") from error
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        passage_id, knowledge = _passage(number, line)
        if passage_id in passages:
            raise TriplesFormatError(f"line {number}: passage_id {passage_id!r} appears twice")
        passages[passage_id] = knowledge
    if not passages:
        raise TriplesFormatError(f"{path.name} holds no passages")
    return passages


class PreExtracted:
    """An extractor that looks facts up by document id instead of reading the text."""

    name = "import"
    llm_name = None

    def __init__(self, passages: dict[str, Knowledge]) -> None:
        self.passages = passages

    async def extract(self, text: str, document_id: str) -> Knowledge:
        return self.passages.get(document_id, Knowledge())
