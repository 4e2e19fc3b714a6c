"""The answer without an LLM: the few sentences that best answer the question, each cited.

Both RAGs answer offline this way, from the sentences of the passages Document RAG ranks (each
once, cited by the passage's number), ranked by the cosine of their embedding to the question's.
Graph RAG's kept facts are candidates where a fact states what the passages cannot: a fact no
passage states (a graph loaded, not extracted), and for a question that asks several things,
whose later clause ("and where is that?") is answered by the best fact the walk reached from the
sentence said before it. A fact is said as its evidence sentence, cited by the passages that
hold it, else by its place among the answer's facts ("fact 2"), and judged as the path that
reached it. An answer made of facts alone (no passages) takes them in the walk's order, which
ranks facts, and says each with the best fact the walk continued it with, since a multi-hop
question asks for a path's end. The best are said best first, at most MOST_SENTENCES of them
(MOST_FACTS of facts alone) and ANSWER_CHARS characters with their citations (the first is
always said), so a sentence the walk reached that does not bear on the question is never said
while better ones exist.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from sparqlrag.models.embedder import Embedder
from sparqlrag.models.sentences import sentence_splitter
from sparqlrag.retrieval.question import clauses

MOST_SENTENCES = 3
MOST_FACTS = 5  # a fact is shorter than a sentence: an answer of facts alone says as many as the old one did
ANSWER_CHARS = 400
SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*$")
NO_PASSAGE = "No passage in this collection matches the question."


@dataclass(frozen=True)
class Candidate:
    """A sentence that may be said, how it is cited, and the text it is judged by."""

    text: str
    citation: str
    judged: str = ""
    follows: frozenset[str] = frozenset()  # a fact's: the sentences of the facts the walk reached it through
    unsourced: bool = False  # a fact no passage states (a graph loaded, not extracted)

    @property
    def said(self) -> str:
        return f"{self.text} [{self.citation}]"


class AnswerSentences:
    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._splitter = sentence_splitter()

    def of_passages(self, texts: Sequence[str]) -> list[Candidate]:
        """Every sentence of the passages' texts, numbered as the answer's sources are (from 1). A
        heading is a "sentence" to the splitter but no answer: what ends like a sentence is kept
        when a passage has any."""
        candidates: list[Candidate] = []
        for number, text in enumerate(texts, start=1):
            sentences = self._splitter.tokenize(text)
            ended = [s for s in sentences if SENTENCE_END.search(s)]
            candidates += [Candidate(s, str(number)) for s in ended or sentences]
        return candidates

    def answer(self, question: str, sentences: Sequence[Candidate], facts: Sequence[Candidate] = ()) -> str:
        """The best of the passages' sentences, best first, within MOST_SENTENCES and
        ANSWER_CHARS; NO_PASSAGE when there are no candidates. With no passages the answer is made
        of the facts, in the walk's order (`facts` come best first), up to MOST_FACTS. A question
        that asks several things ("Where did she work, and where is that?", question.clauses)
        first gets the best sentence for the whole, then for each later clause the best for it
        among the facts the walk reached through the sentence said before it (among the
        sentences, when none), then the best for the whole again. An answer made of facts says
        each with the best fact the walk continued it with: a path's end is what a multi-hop
        question asks for."""
        unique = _once([*sentences, *facts])
        if not unique:
            return NO_PASSAGE
        passages = {c.text for c in sentences}
        pool = [i for i, c in enumerate(unique) if c.text in passages or c.unsourced or not sentences]
        later = clauses(question)[1:]
        ranked = pool  # facts alone: the walk's order
        if sentences or later:  # one batch: the question, its later clauses, the candidates
            vectors = self.embedder.embed([question, *later, *(c.judged or c.text for c in unique)])
            targets, vectors = vectors[: 1 + len(later)], vectors[1 + len(later) :]
            if sentences:
                ranked = sorted(pool, key=lambda i: -float(vectors[i] @ targets[0]))
        picks = ranked[:1]
        for target in targets[1:] if later else []:  # "where is that?" asks about what was just said
            nearest = np.argsort(-(vectors @ target), kind="stable")
            fresh = [int(i) for i in nearest if int(i) not in picks]
            continuing = [i for i in fresh if unique[picks[-1]].text in unique[i].follows]
            picks += (continuing or [i for i in fresh if i in pool])[:1]
        following, most = ([], MOST_SENTENCES) if sentences else (pool, MOST_FACTS)
        said: list[str] = []
        for index in dict.fromkeys([*picks, *ranked]):
            if unique[index].said in said:
                continue
            after = [i for i in following if unique[index].text in unique[i].follows and unique[i].said not in said]
            for told in [unique[index], *(unique[i] for i in after[:1])]:
                if len(said) == most or (said and len(" ".join([*said, told.said])) > ANSWER_CHARS):
                    return " ".join(said)
                said.append(told.said)
        return " ".join(said)


def _once(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Each sentence once, cited as it first came, continuing every fact it continues anywhere."""
    first: dict[str, Candidate] = {}
    for candidate in candidates:
        known = first.setdefault(candidate.text, candidate)
        if candidate.follows - known.follows:
            first[candidate.text] = replace(known, follows=known.follows | candidate.follows)
    return list(first.values())
