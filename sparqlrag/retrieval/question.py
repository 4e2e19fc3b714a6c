"""What a question must be before any retrieval runs."""

from __future__ import annotations

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
