"""What every extractor returns for one chunk: entities (with optional definitions) and facts."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Entity:
    name: str
    definition: str | None = None


@dataclass(frozen=True)
class Fact:
    """subject --predicate--> object; the object is an entity name or a literal value."""

    subject: str
    predicate: str
    object: str
    object_entity: bool = True
    sentence: str | None = None  # the evidence, when the extractor knows it


@dataclass
class Knowledge:
    entities: list[Entity] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    rejected: int = 0  # items the extractor produced in the wrong shape
