"""What reads model output, prompt files and pre-extracted triples."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sparqlrag.extraction.knowledge import Fact
from sparqlrag.extraction.triples_import import PreExtracted, TriplesFormatError, read_triples
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
from tests.conftest import TEST_DATA

MUSIQUE = TEST_DATA / "musique" / "triples.jsonl"


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


def test_reads_the_shared_musique_triples() -> None:
    passages = read_triples(MUSIQUE)
    assert len(passages) == 1890
    assert sum(len(k.facts) for k in passages.values()) + sum(k.rejected for k in passages.values()) == 17234
    first = passages["mq0"]
    assert Fact("Journal of Mathematical Physics", "published by", "American Institute of Physics", True) in first.facts
    assert Fact("Journal of Mathematical Physics", "has impact factor of", "1.355 in 2018", False) in first.facts
    knowledge = asyncio.run(PreExtracted(passages).extract("ignored text", "mq0"))
    assert knowledge is first and asyncio.run(PreExtracted(passages).extract("x", "unknown")).facts == []


@pytest.mark.parametrize(
    "content,message",
    [
        ('{"passage_id": "a", "triples": []}\n{not json}\n', "line 2: not JSON"),
        ('["a", "b"]\n', "line 1: expected an object"),
        ('{"passage_id": "", "triples": []}\n', "line 1: 'passage_id' must be a non-empty string"),
        ('{"passage_id": "a", "triples": [["s", "p"]]}\n', "line 1: each triple must be"),
        ('{"passage_id": "a", "triples": "s p o"}\n', "line 1: 'triples' must be a list"),
        ('{"passage_id": "a", "entities": "x", "triples": []}\n', "line 1: 'entities' must be a list"),
        (
            '{"passage_id": "a", "triples": []}\n\n{"passage_id": "a", "triples": []}\n',
            "line 3: passage_id 'a' appears twice",
        ),
        ("\n\n", "holds no passages"),
    ],
)
def test_malformed_files_name_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "triples.jsonl"
    path.write_text(content)
    with pytest.raises(TriplesFormatError, match=message):
        read_triples(path)
