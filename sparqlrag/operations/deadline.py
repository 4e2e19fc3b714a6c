"""A query's time limit, shared by the steps it takes: its SPARQL services, their scopes and the
query itself each get what is left."""

from __future__ import annotations

import time

from sparqlrag.store.base import QueryTimeout


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.ends = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left; QueryTimeout when none are."""
        left = self.ends - time.monotonic()
        if left <= 0:
            raise QueryTimeout("the query ran out of time while its SPARQL services were evaluated")
        return left
