"""A conversation answered as a chat model answers it (the OpenAI wire format's use case): the
model is a collection, the last user turn the question, asked the default answer way (Graph
RAG's evidence mode), and the reply is Markdown: the answer with its numbered citations, then
each source with its citation, a link to the original file at its page, and the trace.

A reply whole and a reply streamed are made of the same pieces (`pieces`), so they say the same.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from sparqlrag.models.prompts import render
from sparqlrag.operations import answers, collections
from sparqlrag.operations.access import Access
from sparqlrag.operations.collection import Collection
from sparqlrag.operations.failures import Refused
from sparqlrag.operations.requests import ChatRequest, GraphRagRequest, validated
from sparqlrag.retrieval.trace import FollowUp
from sparqlrag.services import Services

MAX_CARRIED = 5  # names carried into a follow-up from earlier turns, the latest turns' first
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


async def standalone(collection: Collection, asked: ChatRequest) -> tuple[str, FollowUp | None]:
    """The last question made to stand alone, and how (None: it was the first). With an LLM,
    rewritten by it (the prompt `standalone`); offline, followed by the names of the earlier
    user turns it does not say itself, so that grounding and search find what "it" was."""
    last, turn = question(asked), len(asked.messages) - 1
    earlier = [m.text for m in asked.messages[:-1] if m.role == "user"]
    if not earlier:
        return last, None
    services = collection.services
    if services.llm is not None:
        conversation = "\n".join(f"{m.role}: {m.text}" for m in asked.messages[:-1] if m.role in ("user", "assistant"))
        prompt = render("standalone", services.settings.prompts_dir, conversation=conversation, question=last)
        completion = await services.llm.complete(prompt, max_tokens=200)
        rewritten = next((line.strip() for line in completion.text.splitlines() if line.strip()), "") or last
        return rewritten, FollowUp(last, turn, (), completion.input_tokens, completion.output_tokens)
    carried = carried_names(services.graph_rag.phrases, earlier, last)
    return (f"{last} ({'; '.join(carried)})" if carried else last), FollowUp(last, turn, tuple(carried))


def carried_names(phrases: Callable[[str], list[str]], earlier: list[str], last: str) -> list[str]:
    """The names the earlier turns say (latest first) that the last does not: a one-word name
    that only opens its turn ("Tell me...") is a capital, not a name."""
    said, found = last.casefold(), []
    for turn in reversed(earlier):
        for name in phrases(turn):
            opening = turn.lstrip().startswith(name) and " " not in name and turn.count(name) == 1
            if not opening and name.casefold() not in said and name not in found:
                found.append(name)
    return found[:MAX_CARRIED]


async def pieces(collection: Collection, asked: ChatRequest, reply: Reply) -> AsyncIterator[str]:
    """The reply's Markdown as it is made: the answer's pieces, then its sources; `reply`
    gathers the whole text, the trace and the usage."""
    alone, follow_up = await standalone(collection, asked)
    graph = validated(GraphRagRequest, {"question": alone})
    sources: list[dict[str, Any]] = []
    async for event, data in await answers.stream_graph(collection, graph, follow_up):
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
