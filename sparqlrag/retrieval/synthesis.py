"""The last stage of both RAGs: the answer's text from the LLM, streamed or in one call."""

from __future__ import annotations

from collections.abc import AsyncIterator

from sparqlrag.models.llm import ChatModel
from sparqlrag.retrieval.trace import Trace


async def synthesise(llm: ChatModel, prompt: str, trace: Trace, *, live: bool) -> AsyncIterator[str]:
    """Yields the answer in pieces and records it, and the model that wrote it, in `trace`.
    Live, the LLM streams it (token counts reach only the model's usage: a stream reports them
    at its end, per model); otherwise it comes in one cached completion whose tokens the trace
    counts."""
    if live:
        pieces: list[str] = []
        async for piece in llm.stream(prompt):
            pieces.append(piece)
            yield piece
        trace.answer, trace.model = "".join(pieces), llm.name
    else:
        completion = await llm.complete(prompt)
        trace.count(completion)
        trace.answer, trace.model = completion.text, completion.model
        yield completion.text
