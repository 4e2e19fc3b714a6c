"""What every extractor returns for one chunk: entities (with optional definitions) and facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

COOCCURS = "co-occurs with"  # the predicate of a fact that only says two names share a sentence


@dataclass(frozen=True)
class Entity:
    name: str
    definition: str | None = None
    type: str | None = None  # an ontology class IRI, when extraction was guided by an ontology


@dataclass(frozen=True)
class Fact:
    """subject --predicate--> object; the object is an entity name or a literal value."""

    subject: str
    predicate: str
    object: str
    object_entity: bool = True
    sentence: str | None = None  # the evidence, when the extractor knows it
    property: str | None = None  # the ontology property IRI the predicate is (guided extraction)


@dataclass
class Knowledge:
    entities: list[Entity] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    rejected: int = 0  # items the extractor produced in the wrong shape, or that broke the ontology
    ontology: str | None = None  # the name of the ontology that typed the entities
    aliases: list[tuple[str, str]] = field(default_factory=list)  # (alias, entity name) an LLM read in the text


class Extractor(Protocol):
    """Reads one chunk. `name` and `llm_name` (the LLM it asks, if any) are recorded on the
    extraction activity. An extractor may also have `async prepare(texts)`, which the pipeline
    calls with a document's new chunks before reading them one by one, to do work that is
    cheaper in batches."""

    name: str

    @property
    def llm_name(self) -> str | None: ...

    async def extract(self, text: str, document_id: str) -> Knowledge: ...
