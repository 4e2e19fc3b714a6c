"""What a question must be before any retrieval runs."""

from __future__ import annotations

import re

MAX_QUESTION_CHARS = 2000


class QuestionTooLong(ValueError):
    """Longer than any question needs to be: refused before it reaches a model."""


def check_question(question: object) -> str:
    """The question, stripped; ValueError (QuestionTooLong for length) says what is wrong."""
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question must be a non-empty string")
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionTooLong(f"the question is {len(question)} characters long; the limit is {MAX_QUESTION_CHARS}")
    return question.strip()


_CLAUSE_BREAK = re.compile(r",\s*(?:and|but)\s+|;\s*", re.IGNORECASE)


def clauses(question: str) -> list[str]:
    """The question's clauses when it asks several things ("Where did she work, and where is
    that?"): each is a sub-question a path may answer. A single-clause question has none."""
    parts = [part.strip(" ,;") for part in _CLAUSE_BREAK.split(question)]
    parts = [part for part in parts if len(part.split()) >= 2]
    return parts if len(parts) > 1 else []


class EmptyGraph(LookupError):
    """The collection has no entities to ground a question on."""
