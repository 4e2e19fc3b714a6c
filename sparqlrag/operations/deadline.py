"""A query's time limit, shared by the steps it takes: its SPARQL services, their scopes and the
query itself each get what is left (or the explorer's several queries for one picture)."""

from __future__ import annotations

import time

from sparqlrag.store.base import QueryTimeout


class Deadline:
    def __init__(self, seconds: float, doing: str = "while its SPARQL services were evaluated") -> None:
        self.ends = time.monotonic() + seconds
        self.doing = doing

    def left(self) -> float:
        """Seconds left; QueryTimeout when none are."""
        left = self.ends - time.monotonic()
        if left <= 0:
            raise QueryTimeout(f"the query ran out of time {self.doing}")
        return left
