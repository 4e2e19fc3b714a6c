"""Prompt templates and tolerant parsing of model output, including output from the stubbed model."""

from __future__ import annotations

import asyncio

from sparqlrag.models.llm import AnthropicModel
from sparqlrag.models.prompts import (
    Relationship,
    parse_relationships,
    render,
)
from tests.llm_stub import Reply, serve_stub


def test_malformed_model_output_through_the_real_client() -> None:
    stub, stop = serve_stub()
    try:
        stub.script(
            Reply(
                'Here are the facts:\n```json\n[{"subject": "Paris", "predicate": "is capital of", '
                '"object": "France", "object-entity": true}, {"subject": "Paris", "predic'
            )
        )
        model = AnthropicModel("claude-test", api_key="sk-test", base_url=stub.url)
        completion = asyncio.run(model.complete(render("relationships", text="Paris is the capital of France.")))
    finally:
        stop()
    parsed = parse_relationships(completion.text)
    assert parsed.items == [Relationship("Paris", "is capital of", "France", True)]
    assert "Paris is the capital of France." in stub.requests[0]["messages"][0]["content"]
