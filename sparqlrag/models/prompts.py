"""Prompt templates (editable text files) and tolerant, validated parsing of the model's JSON.

Templates live in `models/prompts/NAME.txt` and use `$name` placeholders (string.Template),
so JSON braces in a prompt need no escaping. A `prompts_dir` setting may hold edited copies;
a file there replaces the packaged one of the same name.

Models wrap JSON in code fences, add prose before or after it, or stop part-way through an
array. `json_items` recovers every complete item in those cases; the `parse_*` functions
then keep the items of the right shape and count the rest.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

PROMPT_NAMES = (
    "definitions",
    "relationships",
    "concepts",
    "synthesis",
    "edge_reasoning",
    "fact_filter",
    "extract_with_ontology",
    "nl_query",
    "standalone",
)
_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)(?:```|$)", re.DOTALL)


class PromptError(Exception):
    """A template is missing, or a placeholder has no value."""


def template(name: str, prompts_dir: Path | None = None) -> Template:
    if name not in PROMPT_NAMES:
        raise PromptError(f"unknown prompt {name!r}; prompts are {', '.join(PROMPT_NAMES)}")
    if prompts_dir is not None and (prompts_dir / f"{name}.txt").is_file():
        return Template((prompts_dir / f"{name}.txt").read_text(encoding="utf-8"))
    return Template((resources.files("sparqlrag.models") / "prompts" / f"{name}.txt").read_text(encoding="utf-8"))


def render(name: str, prompts_dir: Path | None = None, **values: str) -> str:
    try:
        return template(name, prompts_dir).substitute(values)
    except KeyError as error:
        raise PromptError(f"prompt {name!r} needs a value for ${error.args[0]}") from None
    except ValueError as error:
        raise PromptError(f"prompt {name!r} is not a valid template: {error}") from None


def json_items(text: str) -> list[Any]:
    """The items of the first JSON array in `text` (an object counts as a one-item array),
    or of JSON lines; complete items survive a truncated array."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    starts = [i for i in (body.find("["), body.find("{")) if i >= 0]
    if not starts:
        return []
    start = min(starts)
    decoder = json.JSONDecoder()
    if body[start] == "[":
        try:
            value, _ = decoder.raw_decode(body, start)
            return list(value)
        except json.JSONDecodeError:
            pass
    items: list[Any] = []  # truncated array, or objects one after another: take complete values
    position = start + 1 if body[start] == "[" else start
    while position < len(body):
        while position < len(body) and body[position] in " \t\r\n,":
            position += 1
        if position >= len(body) or body[position] == "]":
            break
        try:
            value, position = decoder.raw_decode(body, position)
        except json.JSONDecodeError:
            break
        items.append(value)
        if body[start] == "{":  # objects one per line; stop at the first prose after them
            while position < len(body) and body[position] in " \t\r\n,":
                position += 1
            if position < len(body) and body[position] != "{":
                break
    return items


@dataclass(frozen=True)
class Definition:
    entity: str
    definition: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Relationship:
    subject: str
    predicate: str
    object: str
    object_entity: bool


@dataclass(frozen=True)
class Parsed:
    """Valid items, and how many items had the wrong shape (for logs and the trace)."""

    items: list[Any]
    rejected: int


def _text(item: dict[str, Any], key: str) -> str | None:
    value = item.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    return " ".join(value.split()) if isinstance(value, str) and value.strip() else None


def parse_definitions(text: str) -> Parsed:
    items, rejected = [], 0
    for item in json_items(text):
        entity = _text(item, "entity") if isinstance(item, dict) else None
        definition = _text(item, "definition") if isinstance(item, dict) else None
        if entity and definition:
            aliases = item.get("aliases") if isinstance(item.get("aliases"), list) else []
            names = tuple(dict.fromkeys(" ".join(a.split()) for a in aliases if isinstance(a, str) and a.strip()))
            items.append(Definition(entity, definition, tuple(name for name in names if name != entity)))
        else:
            rejected += 1
    return Parsed(items, rejected)


def parse_relationships(text: str) -> Parsed:
    items, rejected = [], 0
    for item in json_items(text):
        if not isinstance(item, dict):
            rejected += 1
            continue
        subject, predicate, obj = _text(item, "subject"), _text(item, "predicate"), _text(item, "object")
        flag = item.get("object-entity", item.get("object_entity", True))
        if subject and predicate and obj:
            object_entity = flag if isinstance(flag, bool) else str(flag).strip().lower() not in ("false", "0", "no")
            items.append(Relationship(subject, predicate.lower(), obj, object_entity))
        else:
            rejected += 1
    return Parsed(items, rejected)


def parse_concepts(text: str) -> Parsed:
    items, rejected = [], 0
    for item in json_items(text):
        concept = " ".join(item.split()) if isinstance(item, str) else None
        if concept:
            items.append(concept)
        else:
            rejected += 1
    return Parsed(items, rejected)
