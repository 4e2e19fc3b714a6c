"""LLM extraction: one prompt for entities and their definitions, one for relationships."""

from __future__ import annotations

from pathlib import Path

from sparqlrag.extraction.knowledge import Entity, Fact, Knowledge
from sparqlrag.models.llm import ChatModel
from sparqlrag.models.prompts import parse_definitions, parse_relationships, render


class LLMExtractor:
    name = "llm"

    def __init__(self, llm: ChatModel, prompts_dir: Path | None = None, max_tokens: int = 4096) -> None:
        self.llm = llm
        self.llm_name = llm.name
        self.prompts_dir = prompts_dir
        self.max_tokens = max_tokens

    async def extract(self, text: str, document_id: str = "") -> Knowledge:
        """Definitions, then relationships (the pipeline runs many chunks at once, so the two
        prompts of one chunk need not overlap)."""
        definitions = parse_definitions(
            (
                await self.llm.complete(render("definitions", self.prompts_dir, text=text), max_tokens=self.max_tokens)
            ).text
        )
        relationships = parse_relationships(
            (
                await self.llm.complete(
                    render("relationships", self.prompts_dir, text=text), max_tokens=self.max_tokens
                )
            ).text
        )
        entities = {d.entity: Entity(d.entity, d.definition) for d in definitions.items}
        for r in relationships.items:
            for name in (r.subject, r.object) if r.object_entity else (r.subject,):
                entities.setdefault(name, Entity(name))
        facts = [Fact(r.subject, r.predicate, r.object, r.object_entity) for r in relationships.items]
        aliases = [(alias, d.entity) for d in definitions.items for alias in d.aliases]
        return Knowledge(list(entities.values()), facts, definitions.rejected + relationships.rejected, aliases=aliases)
