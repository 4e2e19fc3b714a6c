"""Prompt templates and tolerant parsing of model output, including output from the stubbed model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sparqlrag.models.llm import AnthropicModel
from sparqlrag.models.prompts import (
    Definition,
    PromptError,
    Relationship,
    json_items,
    parse_concepts,
    parse_definitions,
    parse_relationships,
    render,
)
from tests.llm_stub import Reply, serve_stub


def test_render_fills_placeholders_and_keeps_braces() -> None:
    prompt = render("relationships", text='The {braces} and "quotes" stay.')
    assert 'The {braces} and "quotes" stay.' in prompt and "$text" not in prompt
    with pytest.raises(PromptError, match=r"\$text"):
        render("definitions")
    with pytest.raises(PromptError, match="unknown prompt"):
        render("nonsense", text="x")


def test_edited_prompt_files_replace_packaged_ones(tmp_path: Path) -> None:
    (tmp_path / "concepts.txt").write_text("Concepts of: $question")
    assert render("concepts", tmp_path, question="who?") == "Concepts of: who?"
    assert "Answer the question" in render("synthesis", tmp_path, question="q", knowledge="k")


@pytest.mark.parametrize(
    "text,expected",
    [
        ('[{"a": 1}, {"a": 2}]', [{"a": 1}, {"a": 2}]),
        ('Here you go:\n```json\n[{"a": 1}]\n```\nHope this helps!', [{"a": 1}]),
        ('```\n[{"a": 1}, {"a": 2}', [{"a": 1}, {"a": 2}]),  # unclosed fence, unclosed array
        ('[{"a": 1}, {"a": 2}, {"a": 3, "b": "trunc', [{"a": 1}, {"a": 2}]),  # cut off mid-item
        ('{"a": 1}\n{"a": 2}\n', [{"a": 1}, {"a": 2}]),  # JSON lines
        ('Sure. {"a": 1} is the answer.', [{"a": 1}]),
        ("I could not find any facts.", []),
        ("[]", []),
    ],
)
def test_json_items_tolerates_what_models_write(text: str, expected: list) -> None:
    assert json_items(text) == expected


def test_parsers_validate_shapes() -> None:
    definitions = parse_definitions(
        '[{"entity": " Ada  Lovelace ", "definition": "A mathematician."}, {"entity": ""}, "junk"]'
    )
    assert definitions.items == [Definition("Ada Lovelace", "A mathematician.")] and definitions.rejected == 2
    relationships = parse_relationships(
        '[{"subject": "Ada", "predicate": "Wrote", "object": "Notes", "object-entity": true},'
        ' {"subject": "Ada", "predicate": "born in", "object": 1815, "object-entity": "false"},'
        ' {"subject": "Ada", "predicate": "knew"}]'
    )
    assert relationships.items == [
        Relationship("Ada", "wrote", "Notes", True),
        Relationship("Ada", "born in", "1815", False),
    ]
    assert relationships.rejected == 1
    concepts = parse_concepts('```json\n["Ada Lovelace", "  birth  year ", 7]\n```')
    assert concepts.items == ["Ada Lovelace", "birth year"] and concepts.rejected == 1


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
