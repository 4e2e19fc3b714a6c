"""LLM extraction through the real anthropic client and the Messages API stub."""

from __future__ import annotations

import asyncio

from sparqlrag.extraction.knowledge import Entity, Fact
from sparqlrag.extraction.llm_extractor import LLMExtractor
from sparqlrag.models.llm import AnthropicModel
from tests.llm_stub import Reply, serve_stub


def test_definitions_and_relationships_become_knowledge() -> None:
    stub, stop = serve_stub()
    try:
        stub.script(
            Reply('```json\n[{"entity": "Marie Curie", "definition": "A physicist and chemist."}, {"entity": ""}]\n```'),
            Reply('[{"subject": "Marie Curie", "predicate": "Was born in", "object": "Warsaw", "object-entity": true},'
                  ' {"subject": "Marie Curie", "predicate": "won", "object": "two Nobel Prizes", "object-entity": false},'
                  ' {"subject": "Marie'),  # truncated output: the complete items still count
        )  # fmt: skip
        extractor = LLMExtractor(AnthropicModel("claude-test", api_key="sk-test", base_url=stub.url))
        knowledge = asyncio.run(extractor.extract("Marie Curie was born in Warsaw. She won two Nobel Prizes."))
    finally:
        stop()
    assert knowledge.entities == [Entity("Marie Curie", "A physicist and chemist."), Entity("Warsaw")]
    assert knowledge.facts == [Fact("Marie Curie", "was born in", "Warsaw", True),
                               Fact("Marie Curie", "won", "two Nobel Prizes", False)]  # fmt: skip
    assert knowledge.rejected == 1
    assert extractor.model == "anthropic:claude-test"
    prompts = [r["messages"][0]["content"] for r in stub.requests]
    assert "definition" in prompts[0] and "object-entity" in prompts[1]
    assert all("Marie Curie was born in Warsaw." in p for p in prompts)
