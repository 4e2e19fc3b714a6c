"""The answer without an LLM: the few sentences that best answer the question, each cited.

Both RAGs answer offline this way. The candidates are the sentences of the passages shown (each
once, cited by the passage's number) and, for Graph RAG, the facts the walk kept, each as its
evidence sentence (cited by the passages that state it, else by its place among the answer's
facts). All are ranked by one measure, the cosine of their embedding to the question's; a fact
is judged as the path that reached it (the fact it continues, then it), so a second hop counts
for what it completes, and a question that asks several things has each clause answered in
turn. The best are said best first, at most MOST_SENTENCES of them and ANSWER_CHARS characters
with their citations (the first is always said). A sentence the walk
reached that does not bear on the question loses to those that do, so it is never said while
better ones exist.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sparqlrag.models.embedder import Embedder
from sparqlrag.models.sentences import sentence_splitter
from sparqlrag.retrieval.question import clauses

MOST_SENTENCES = 3
ANSWER_CHARS = 400
SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*$")
NO_PASSAGE = "No passage in this collection matches the question."


@dataclass(frozen=True)
class Candidate:
    """A sentence that may be said, how it is cited, and the text it is judged by."""

    text: str
    citation: str
    judged: str = ""

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

    def answer(self, question: str, candidates: Sequence[Candidate]) -> str:
        """The best candidates, best first, within MOST_SENTENCES and ANSWER_CHARS; NO_PASSAGE
        when there are none. A question that asks several things ("Where did she work, and where
        is that?", question.clauses) first gets the best sentence for the whole, then the best for
        each later clause, then the best for the whole again."""
        first: dict[str, Candidate] = {}
        for candidate in candidates:  # each sentence once, cited as it first came
            first.setdefault(candidate.text, candidate)
        unique = list(first.values())
        if not unique:
            return NO_PASSAGE
        targets = [question, *clauses(question)[1:]]
        vectors = self.embedder.embed([*targets, *(c.judged or c.text for c in unique)])
        similarity: np.ndarray = vectors[len(targets) :] @ vectors[: len(targets)].T
        order = [np.argsort(-similarity[:, target], kind="stable") for target in range(len(targets))]
        picks = [int(order[0][0])]
        for ranked in order[1:]:  # each later clause's best sentence not yet picked
            picks.append(next((int(i) for i in ranked if int(i) not in picks), picks[0]))
        said: list[str] = []
        for index in dict.fromkeys([*picks, *map(int, order[0][1:])]):
            sentence = unique[index].said
            if len(said) == MOST_SENTENCES or (said and len(" ".join([*said, sentence])) > ANSWER_CHARS):
                break
            said.append(sentence)
        return " ".join(said)
