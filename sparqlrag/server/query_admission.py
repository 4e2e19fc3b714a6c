"""How many SPARQL queries one client may have running at once, and how often it may stop the store.

A read token is enough to send a query that runs for its whole time limit, and ten of them at
once filled every thread of the store. So each client (its token, else its address) may have
`max_concurrent_queries` queries running (/sparql, MCP `sparql_query`, nl-query, the explorer's
graph); one more is
429 `too_many_queries` with Retry-After. A query that stops the store process (400
`query_crashed_store`) costs every client a restart; a client whose queries did that
`query_crash_budget` times within CRASH_WINDOW seconds gets 429 for its queries until the oldest
of those leaves the window. Everything here runs on the event loop: no lock.

Uploads are admitted the same way (`max_concurrent_uploads`, 429 `too_many_uploads`): a document
is held in memory from its body's read to its decode, and one client's hundred uploads at once
would hold a hundred bodies.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sparqlrag.operations.failures import Refused
from sparqlrag.store.base import QueryCrashed

CRASH_WINDOW = 600.0  # seconds
MAX_CLIENTS = 10_000  # crash records kept; the least recently used go first


class QueryAdmission:
    def __init__(
        self, concurrent: int, crash_budget: int, what: str = "queries", setting: str = "max_concurrent_queries"
    ) -> None:
        self.concurrent, self.crash_budget = concurrent, crash_budget
        self.what, self.setting = what, setting
        self._running: dict[bytes, int] = {}
        self._crashes: OrderedDict[bytes, deque[float]] = OrderedDict()

    @asynccontextmanager
    async def admitted(self, client: bytes) -> AsyncIterator[None]:
        """Run the block as one of `client`'s queries, or raise 429."""
        self._check_crashes(client)
        running = self._running.get(client, 0)
        if self.concurrent and running >= self.concurrent:
            raise Refused(
                429,
                f"too_many_{self.what}",
                f"{running} {self.what} of this client are running, the most it may have at once "
                f"({self.setting}); send this one when one of them has finished",
                {"Retry-After": "1"},
            )
        self._running[client] = running + 1
        try:
            yield
        except QueryCrashed as error:
            if error.stopped_store:
                self._crashed(client)
            raise
        finally:
            left = self._running.pop(client) - 1
            if left:
                self._running[client] = left

    def _check_crashes(self, client: bytes) -> None:
        if not self.crash_budget or client not in self._crashes:
            return
        times, now = self._crashes[client], time.monotonic()
        while times and now - times[0] > CRASH_WINDOW:
            times.popleft()
        if len(times) >= self.crash_budget:
            wait = math.ceil(CRASH_WINDOW - (now - times[0]))
            raise Refused(
                429,
                "too_many_crashes",
                f"queries of this client stopped the store {len(times)} times in {CRASH_WINDOW:g} s "
                f"(query_crash_budget); its queries are refused for {wait} s",
                {"Retry-After": str(wait)},
            )

    def _crashed(self, client: bytes) -> None:
        times = self._crashes.pop(client, deque())
        times.append(time.monotonic())
        self._crashes[client] = times
        while len(self._crashes) > MAX_CLIENTS:
            self._crashes.popitem(last=False)
