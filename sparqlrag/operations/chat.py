"""A conversation answered as a chat model answers it (the OpenAI wire format's use case): the
model is a collection, the last user turn the question, asked the default answer way (Graph
RAG's evidence mode), and the reply is Markdown: the answer with its numbered citations, then
each source with its citation, a link to the original file at its page, and the trace.

A reply whole and a reply streamed are made of the same pieces (`pieces`), so they say the same.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sparqlrag.operations import answers, collections
from sparqlrag.operations.access import Access
from sparqlrag.operations.collection import Collection
from sparqlrag.operations.failures import Refused
from sparqlrag.operations.requests import ChatRequest, GraphRagRequest, validated
from sparqlrag.services import Services

MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]()<>#|])")


@dataclass
class Reply:
    """What a chat reply is made of, as it comes: its Markdown, and what the answer cost."""

    text: str = ""
    trace: str | None = None
    usage: dict[str, int] = field(default_factory=dict)


async def models(services: Services, access: Access) -> list[str]:
    """The collections the caller may read, each a model."""
    return [info.name for info in await collections.listed(services, access)]


async def model_of(services: Services, access: Access, name: str) -> str:
    """The model `name` is, if the caller may read it: 404 otherwise (as OpenAI answers for a
    model a key cannot use, whether or not it exists)."""
    if name not in await models(services, access):
        raise Refused(404, "model_not_found", f"the model {name[:200]!r} does not exist or this key cannot use it")
    return name


def question(asked: ChatRequest) -> str:
    """The question the conversation asks: its last turn, the user's."""
    return asked.messages[-1].text


async def pieces(collection: Collection, asked: ChatRequest, reply: Reply) -> AsyncIterator[str]:
    """The reply's Markdown as it is made: the answer's pieces, then its sources; `reply`
    gathers the whole text, the trace and the usage."""
    earlier = [message.model_dump() for message in asked.messages[:-1]]
    graph = validated(GraphRagRequest, {"question": question(asked), "conversation": earlier or None})
    sources: list[dict[str, Any]] = []
    async for event, data in await answers.stream_graph(collection, graph):
        text = ""
        if event == "token":
            text = data["text"]
        elif event == "sources":
            sources = data["sources"]
        elif event == "done":
            reply.trace, reply.usage = data["trace"], dict(data.get("usage") or {})
            text = sources_markdown(sources, data["trace"])
        if text:
            reply.text += text
            yield text
    if not reply.usage.get("input_tokens"):  # no LLM answered: words stand in for its tokens
        asked_words = sum(len(message.text.split()) for message in asked.messages)
        reply.usage = {"input_tokens": asked_words, "output_tokens": len(reply.text.split())}


def sources_markdown(sources: list[dict[str, Any]], trace: str) -> str:
    """The sources section: each source numbered as the answer cites it, with its citation
    linked to the original file at its page; then the trace."""
    lines = ["", "", "**Sources**", ""]
    for number, source in enumerate(sources, start=1):
        cited = escaped(source.get("citation") or source.get("title") or "a passage no longer held")
        file = source.get("file")
        lines.append(f"{number}. [{cited}]({file})" if linkable(file) else f"{number}. {cited}")
    lines += ["", f"[How this answer was found]({trace})" if linkable(trace) else f"Trace: {escaped(trace)}"]
    return "\n".join(lines) + "\n"


def linkable(iri: str | None) -> bool:
    """Whether a link to `iri` is one to give: http(s) alone, and nothing that ends a Markdown link."""
    return bool(iri) and re.match(r"https?://[^\s()<>]+$", iri or "") is not None


def escaped(text: str) -> str:
    """Text as Markdown shows it literally."""
    return MARKDOWN_SPECIAL.sub(r"\\\1", text)
