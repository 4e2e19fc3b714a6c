"""Decoding in bounded processes: a document from anyone is parsed where it can be stopped.

A PDF whose root refers to itself looped forever in pdfminer, a 10 KB DOCX took minutes and
compressed streams took gigabytes, each on the server's own threads and after the client had
left. So every decode runs in one of `workers` child processes (decode_child.py) under the
document's DecodeLimits: a child is killed (and replaced) at the decode's deadline, when its
caller is cancelled or the caller's client hangs up, and its memory and CPU are capped by the
kernel. What fails is a DecodeError naming the limit; the server's threads never parse.

Workers are handed out fairly: a client may hold all but one of them, and when all are busy
the next free one goes to the waiting client that holds the fewest, so one client's uploads
cannot keep everyone else's waiting. The client
(and how to tell it has gone) is the `DecodeCaller` of the calling context, which the server
sets per request; without one, every decode is one anonymous client's.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import select
import signal
import subprocess
import sys
import threading
from collections import Counter, deque
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from typing import Any, NoReturn

from sparqlrag.extraction.decode_child import READY, frame, read_frame
from sparqlrag.extraction.decode_limits import DecodeError, DecodeLimitExceeded, DecodeLimits
from sparqlrag.extraction.decoders import Decoded
from sparqlrag.extraction.structure import Span

log = logging.getLogger("sparqlrag.extraction")
START_TIMEOUT = 60.0  # seconds a decoding process may take to import its parsers
RETIRE_GROWTH_KIB = 256 * 1024  # a worker whose peak memory grew this far past its start is replaced


@dataclass(frozen=True)
class DecodeCaller:
    """Who a decode is for (its fairness key), and an event set once that client has gone."""

    client: bytes
    gone: asyncio.Event = field(default_factory=asyncio.Event)


CALLER: contextvars.ContextVar[DecodeCaller | None] = contextvars.ContextVar("decode_caller", default=None)


class DecoderUnavailable(RuntimeError):
    """No decoding process could be started (the machine, not the document)."""


class _Died(Exception):
    """The worker ended (killed, or stopped by the kernel) before it answered."""


class _Worker:
    """One child process that decodes; used by one decode at a time."""

    def __init__(self, limits: DecodeLimits) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sparqlrag.extraction.decode_child", json.dumps(asdict(limits))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.first_peak: int | None = None
        assert self.process.stdout is not None
        started, _, _ = select.select([self.process.stdout], [], [], START_TIMEOUT)
        if not started or read_frame(self.process.stdout) != READY:  # (imports done, limits set: clocks start after)
            self.kill()
            raise DecoderUnavailable("a decoding process could not start; see the server's log")

    def run(self, header: dict[str, Any], data: bytes) -> dict[str, Any]:
        """The child's answer (blocking); _Died if it ended first."""
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(frame(json.dumps(header).encode()) + frame(data))
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            raise _Died from None
        answer = read_frame(self.process.stdout)
        if answer is None:
            raise _Died
        decoded: dict[str, Any] = json.loads(answer)
        return decoded

    def grew(self, peak_kib: int) -> bool:
        if self.first_peak is None:
            self.first_peak = peak_kib
        return peak_kib - self.first_peak > RETIRE_GROWTH_KIB

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


class _FairSlots:
    """`size` slots handed out fairly: a named client holds at most `size - 1` (one is always
    left for someone else), and a freed slot goes to the waiting client holding fewest, among
    those to the one served longest ago. The anonymous client (b"": the process's own work, the
    CLI) may hold them all."""

    def __init__(self, size: int) -> None:
        self._size = self._free = size
        self._held: Counter[bytes] = Counter()
        self._served: dict[bytes, int] = {}  # client -> the number of its last grant (forgotten with its last slot)
        self._grants = 0
        self._granted: set[asyncio.Future[None]] = set()  # waiters handed a slot, not yet woken
        self._waiting: dict[bytes, deque[asyncio.Future[None]]] = {}
        self._lock = threading.Lock()  # (the CLI may run decodes from more than one event loop)

    @contextlib.asynccontextmanager
    async def slot(self, client: bytes) -> AsyncIterator[None]:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            self._waiting.setdefault(client, deque()).append(waiter)
            self._dispatch()
        try:
            await waiter
        except asyncio.CancelledError:
            with self._lock:
                if waiter in self._granted:  # handed a slot as it was cancelled: pass it on
                    self._granted.discard(waiter)
                    self._release(client)
                else:
                    self._forget(client, waiter)
            raise
        with self._lock:
            self._granted.discard(waiter)
        try:
            yield
        finally:
            with self._lock:
                self._release(client)

    def _cap(self, client: bytes) -> int:
        return self._size - 1 if client and self._size > 1 else self._size

    def _dispatch(self) -> None:
        """Hand free slots to waiting clients under their cap, fewest held first."""
        while self._free:
            eligible = [client for client in self._waiting if self._held[client] < self._cap(client)]
            if not eligible:
                return
            chosen = min(eligible, key=lambda client: (self._held[client], self._served.get(client, 0)))
            queue = self._waiting[chosen]
            waiter = queue.popleft()
            if not queue:
                del self._waiting[chosen]
            self._free -= 1
            self._held[chosen] += 1
            self._grants += 1
            self._served[chosen] = self._grants
            self._granted.add(waiter)
            waiter.get_loop().call_soon_threadsafe(_grant, waiter)

    def _forget(self, client: bytes, waiter: asyncio.Future[None]) -> None:
        queue = self._waiting.get(client)
        if queue is not None and waiter in queue:
            queue.remove(waiter)
            if not queue:
                del self._waiting[client]
                if client not in self._held:
                    self._served.pop(client, None)

    def _release(self, client: bytes) -> None:
        self._held[client] -= 1
        if self._held[client] <= 0:
            del self._held[client]
            if client not in self._waiting:
                self._served.pop(client, None)
        self._free += 1
        self._dispatch()


def _retrieved(job: asyncio.Future[Any]) -> None:
    """A killed worker's job ends in _Died, which nobody may be left to read."""
    if not job.cancelled():
        job.exception()


def _grant(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class DecodePool:
    """Decodes documents in up to `workers` bounded child processes, started when first needed."""

    def __init__(self, limits: DecodeLimits, workers: int) -> None:
        self.limits = limits
        self._slots = _FairSlots(workers)
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False

    async def decode(self, data: bytes, media_type: str | None, filename: str | None) -> Decoded:
        """The document decoded within the limits, or DecodeError (DecodeLimitExceeded for a limit)."""
        caller = CALLER.get() or DecodeCaller(b"")
        async with self._slots.slot(caller.client):
            worker = await asyncio.to_thread(self._worker)
            answer = await self._answer(worker, caller, {"media_type": media_type, "filename": filename}, data)
            self._done(worker, answer)
        if "decoded" not in answer:
            raise (DecodeLimitExceeded if answer.get("limit") else DecodeError)(answer["error"])
        return _decoded(answer["decoded"])

    async def _answer(
        self, worker: _Worker, caller: DecodeCaller, header: dict[str, Any], data: bytes
    ) -> dict[str, Any]:
        """The worker's answer; the worker killed (and DecodeLimitExceeded) at the deadline or
        when the caller's client has gone, killed with the call when it is cancelled."""
        job = asyncio.ensure_future(asyncio.to_thread(worker.run, header, data))
        job.add_done_callback(_retrieved)
        gone = asyncio.ensure_future(caller.gone.wait())
        try:
            done, _ = await asyncio.wait({job, gone}, timeout=self.limits.seconds, return_when="FIRST_COMPLETED")
        except BaseException:  # cancelled: the child goes with the call
            worker.kill()
            raise
        finally:
            gone.cancel()
        if job not in done:
            worker.kill()
            await asyncio.gather(job, return_exceptions=True)
            if gone in done:
                raise DecodeLimitExceeded("the upload was abandoned while its document was decoded")
            raise DecodeLimitExceeded(f"decoding took longer than {self.limits.seconds:g} s (decode_timeout)")
        try:
            return job.result()
        except _Died:
            self._died(worker)

    def _worker(self) -> _Worker:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return _Worker(self.limits)

    def _done(self, worker: _Worker, answer: dict[str, Any]) -> None:
        """Keep the worker for the next decode, unless it failed on a limit or grew."""
        with self._lock:
            if not (self._closed or answer.get("limit") or worker.grew(int(answer.get("peak_kib", 0)))):
                self._idle.append(worker)
                return
        worker.kill()

    def _died(self, worker: _Worker) -> NoReturn:
        worker.kill()
        code = worker.process.returncode
        if code == -signal.SIGXCPU:
            raise DecodeLimitExceeded(f"decoding took more than {self.limits.seconds:g} s of CPU (decode_timeout)")
        log.warning("a decoding process ended with %s", code)
        raise DecodeLimitExceeded(
            f"the decoder stopped; the document may need more than {self.limits.memory_bytes} bytes "
            "of memory (decode_memory_bytes)"
        )

    def close(self) -> None:
        """Stop the idle workers; a busy one is stopped when its decode ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


def _decoded(fields: dict[str, Any]) -> Decoded:
    spans = tuple(Span(s["start"], s["end"], s["page"], tuple(s["headings"])) for s in fields["spans"])
    return Decoded(fields["text"], fields["media_type"], fields["title"], spans, fields["pages"])
