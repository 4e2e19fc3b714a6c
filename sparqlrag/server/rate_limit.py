"""A per-token rate limit on the routes that answer questions.

An answer costs seconds of CPU (or an LLM call) and writes a trace, and a read token is
enough to ask; so each token (each client address on a server without tokens) has a bucket
of `answer_rate` answers that refills over a minute. An empty bucket is 429 with Retry-After.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict

from starlette.requests import Request

from sparqlrag.operations.failures import Refused
from sparqlrag.server.auth import client_key
from sparqlrag.server.state import state_of

MAX_CLIENTS = 10_000  # buckets kept; the least recently used go first (a full bucket loses nothing)


class AnswerRateLimit:
    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._buckets: OrderedDict[bytes, tuple[float, float]] = OrderedDict()  # client -> (tokens, at)
        self._lock = threading.Lock()

    def check(self, request: Request) -> None:
        """Take one answer from the client's bucket, or raise 429."""
        if not self.per_minute:
            return
        client, now, rate = client_key(request), time.monotonic(), self.per_minute / 60
        with self._lock:
            tokens, at = self._buckets.pop(client, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - at) * rate)
            self._buckets[client] = (tokens - 1 if tokens >= 1 else tokens, now)
            while len(self._buckets) > MAX_CLIENTS:
                self._buckets.popitem(last=False)
        if tokens < 1:
            wait = math.ceil((1 - tokens) / rate)
            raise Refused(
                429,
                "rate_limited",
                f"more than {self.per_minute} answers a minute; try again in {wait} s",
                {"Retry-After": str(wait)},
            )


def limit_answers(request: Request) -> None:
    state_of(request).answer_limit.check(request)
