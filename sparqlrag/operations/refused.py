"""A request refused, as every surface shows it (operations/failures.py maps other errors to one)."""

from __future__ import annotations


class Refused(Exception):
    """A request refused, with what each surface shows: the HTTP status, a code, a message, and
    any `extra` the person needs to act on it (the query an LLM wrote and a check refused)."""

    def __init__(
        self,
        status: int,
        error: str,
        detail: str,
        headers: dict[str, str] | None = None,
        extra: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail
        self.headers = headers
        self.extra = extra or {}
