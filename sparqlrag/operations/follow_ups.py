"""A conversation's last question made to stand alone, so that its search finds what its "it"
and "there" meant: the chat API's and the ask page's follow-up questions."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sparqlrag.models.prompts import render
from sparqlrag.operations.collection import Collection
from sparqlrag.operations.requests import ChatMessage
from sparqlrag.retrieval.trace import FollowUp

MAX_CARRIED = 5  # names carried into a follow-up from earlier turns, the latest turns' first


async def standalone(collection: Collection, messages: Sequence[ChatMessage]) -> tuple[str, FollowUp | None]:
    """The last message's question made to stand alone, and how (None: it was the first). With
    an LLM, rewritten by it (the prompt `standalone`); offline, followed by the names of the
    earlier user turns it does not say itself, so that grounding and search find what "it" was."""
    last, turn = messages[-1].text, len(messages) - 1
    earlier = [m.text for m in messages[:-1] if m.role == "user"]
    if not earlier:
        return last, None
    services = collection.services
    if services.llm is not None:
        conversation = "\n".join(f"{m.role}: {m.text}" for m in messages[:-1] if m.role in ("user", "assistant"))
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
