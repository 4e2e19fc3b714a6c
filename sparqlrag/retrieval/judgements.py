"""What Graph RAG asks the LLM about a walk, when one is configured: which of the question's
nearest facts bear on it (HippoRAG 2's recognition memory), and why each kept edge matters."""

from __future__ import annotations

from pathlib import Path

from sparqlrag.models.llm import ChatModel
from sparqlrag.models.prompts import json_items, render
from sparqlrag.retrieval.pagerank import FactSeed
from sparqlrag.retrieval.trace import Stage
from sparqlrag.retrieval.walk import Edge, Walk


async def recognised(
    llm: ChatModel, prompts_dir: Path | None, walk: Walk, near_facts: list[FactSeed]
) -> list[FactSeed]:
    """The question's nearest facts the LLM keeps as bearing on it (none: PageRank has no entity
    to start from). An answer it cannot read keeps them all."""
    listing = "\n".join(f"{i}. {seed.text}" for i, seed in enumerate(near_facts, start=1))
    prompt = render("fact_filter", prompts_dir, question=walk.trace.question, facts=listing)
    with Stage(walk.trace, "recognition"):
        completion = await llm.complete(prompt, max_tokens=256)
    walk.trace.count(completion)
    kept = [
        item
        for item in json_items(completion.text)
        if isinstance(item, int) and not isinstance(item, bool) and 1 <= item <= len(near_facts)
    ]
    if not kept and "[" not in completion.text:
        return near_facts
    return [near_facts[i - 1] for i in dict.fromkeys(kept)]


async def reasons(llm: ChatModel, prompts_dir: Path | None, walk: Walk, edges: list[Edge]) -> dict[int, str | None]:
    """What the LLM says, for each kept edge (by place, from 0), of why it matters to the
    question (edges it skips are left out)."""
    listing = "\n".join(f"{i}. {e.text}" for i, e in enumerate(edges, start=1))
    prompt = render("edge_reasoning", prompts_dir, question=walk.trace.question, edges=listing)
    completion = await llm.complete(prompt, max_tokens=2048)
    walk.trace.count(completion)
    said: dict[int, str | None] = {}
    for item in json_items(completion.text):
        if isinstance(item, dict) and isinstance(item.get("id"), int) and isinstance(item.get("reasoning"), str):
            if 1 <= item["id"] <= len(edges):
                said[item["id"] - 1] = item["reasoning"].strip() or None
    return said
