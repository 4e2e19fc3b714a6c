"""The parent's hold on the store process (store_process.py): it starts the process with one
connection per serving thread, lends an idle connection to each call, and when the process dies,
killed for a deadline or by what it ran, it records what was running, blames the call that
killed it (crash_report.py) and starts another. WorkerStore (worker.py) makes the calls.

pyoxigraph has no query timeout or cancel, and blocking operators (ORDER BY, GROUP BY, COUNT)
compute inside one native call. The only way to reclaim that CPU is to end the process
running it. So the server's store lives in a child process (one RocksDB opener, as the
store requires), its connections in two lanes: clients' queries (the calls with a deadline) in
one, the server's own calls in the other, so a lane full of slow queries never holds up ingest
bookkeeping or RAG lookups. A query that cannot get a connection before its deadline fails
without running. On a deadline the parent kills the child and starts a new one. Reads that
were running beside the killed query are sent again to the new process (unless past their own
deadline); a kill waits until running writes have finished, so a write's outcome is always known.

Some calls kill the process themselves (a stack overflow, out of memory). The call that did
is found, fails once with QueryCrashed and is never sent again; its text is refused from then
on. Calls that had not started are sent to the new process; a write that was running beside
it fails with StoreUnavailable (it may or may not have applied).
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from sparqlrag.store import crash_report
from sparqlrag.store.base import (
    DISK_FULL,
    QueryCrashed,
    QueryTimeout,
    StorageFull,
    StoreError,
    StoreUnavailable,
)
from sparqlrag.store.store_process import (
    LANES,
    STREAM,
    WRITE_METHODS,
    recv,
    slots,
)

log = logging.getLogger("sparqlrag.store")
SPARQL_METHODS = frozenset({"query", "update"})
MAX_POISONED = 1024
RETRY_START = 5.0  # seconds between tries to start the store process again after one failed
MIN_FREE_BYTES = 32 << 20  # free space a write needs after the disk was found full (a new WAL and MANIFEST)
CRASHED = (
    "this operation stopped the store process (it nests or chains too deeply to evaluate, or needs more "
    "memory than the server has); it was not run again, and the same text is refused until the server restarts"
)


@dataclass
class Call:
    method: str
    frame: tuple[Any, ...]  # (id, method, args, kwargs)
    lane: str  # the connections it is sent on (LANES)
    limit: float | None = None  # a client's query's time limit, in seconds
    deadline: float | None = None  # monotonic time it is stopped at

    @property
    def id(self) -> int:
        request_id: int = self.frame[0]
        return request_id

    @property
    def is_write(self) -> bool:
        return self.method in WRITE_METHODS

    def remaining(self) -> float | None:
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0.0)


@dataclass
class Death:
    """What a child left when it exited: the calls it had begun, the one that killed it (if
    known), and whether the parent stopped it (a deadline) rather than what it ran."""

    started: set[int]
    blamed: int | None
    stopped: bool


@dataclass
class Child:
    process: subprocess.Popen[bytes]
    control: socket.socket  # EOF here: the child has exited
    idle: dict[str, list[socket.socket]]  # per lane, the connections (one per serving thread of the child) no call uses
    writes: int = 0  # writes sent and not answered: a kill waits for them
    stopped: bool = False  # killed by us (a deadline), not by what it ran
    death: Death | None = None


def _poison_key(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes | None:
    """What a text that killed the store is refused by: a query's the same streamed or not."""
    name = kwargs.get("of") if method == STREAM else method
    if name not in SPARQL_METHODS or not args or not isinstance(args[0], str):
        return None
    return hashlib.sha256(f"{name}\0{args[0]}".encode()).digest()


class StoreSupervisor:
    """Starts, lends, watches and restarts the store process. Thread-safe: `_state` guards it all."""

    def __init__(
        self, path: Path, *, threads: int = 8, allow_remote: bool = False, start_timeout: float = 120.0
    ) -> None:
        self.path = path
        self.threads = threads
        self.allow_remote = allow_remote
        self.start_timeout = start_timeout
        self.restarts = 0
        self._ids = itertools.count()
        self._state = threading.Condition()  # guards everything below
        self._pending: dict[int, Call] = {}  # sent and not answered
        self._killing = False  # a kill is due: new writes wait for the next child
        self._closed = False
        self._failure: StoreError | None = None  # set when a restart failed: calls fail fast with it
        self._failed_at = 0.0  # when the last start failed: one more is tried RETRY_START later
        self._full = False  # a write found the disk full: the next write needs a fresh child
        self._restarting = False  # a new child is being started (outside the lock)
        self._poisoned: OrderedDict[bytes, None] = OrderedDict()  # texts that killed the store
        self._lanes = slots(threads)
        self._table_file = tempfile.TemporaryFile()
        self._table = crash_report.RunningTable(self._table_file, len(self._lanes))
        self._dump_file = tempfile.TemporaryFile()
        self._worker: Child | None = None
        self._worker = self._start()

    # -- lifecycle ----------------------------------------------------------------------------

    def _start(self) -> Child:
        self._table.reset()
        self._dump_file.truncate(0)
        control, child_control = socket.socketpair()
        pairs = [socket.socketpair() for _ in self._lanes]
        fds = [child_control.fileno(), self._table_file.fileno(), self._dump_file.fileno()]
        connection_fds = [theirs.fileno() for _, theirs in pairs]
        command = [
            sys.executable,
            "-c",
            "import sys; from sparqlrag.store.store_process import main; main(sys.argv[1:])",
            str(fds[0]),
            str(self.path),
            "1" if self.allow_remote else "0",
            str(fds[1]),
            str(fds[2]),
            *map(str, connection_fds),
        ]
        process = subprocess.Popen(command, pass_fds=fds + connection_fds)
        child_control.close()
        for _, theirs in pairs:
            theirs.close()
        ours = [mine for mine, _ in pairs]
        control.settimeout(self.start_timeout)
        try:
            ready = recv(control)
        except TimeoutError:
            ready = None
        control.settimeout(None)
        if ready is None or not ready[1]:
            process.kill()
            process.wait()
            for sock in [control, *ours]:
                sock.close()
            if ready is not None and isinstance(ready[2], StoreError):
                raise ready[2]
            raise StoreUnavailable(f"the store process for {self.path} did not start")
        idle: dict[str, list[socket.socket]] = {lane: [] for lane in LANES}
        for lane, sock in zip(self._lanes, ours, strict=True):
            idle[lane].append(sock)
        worker = Child(process, control, idle)
        threading.Thread(target=self._watch, args=(worker,), daemon=True, name="store-watch").start()
        return worker

    def _watch(self, worker: Child) -> None:
        recv(worker.control)  # returns when the child has exited (its end closed)
        self._after_exit(worker)

    def _after_exit(self, worker: Child) -> None:
        """The child is gone (killed for a deadline, or crashed): record what it left for the
        calls it had (each decides in `_after_death`), and start another child."""
        returncode = worker.process.wait()
        with self._state:
            running = self._table.running() if not self._closed else {}  # (close() shuts the files after _closed)
            dump = os.pread(self._dump_file.fileno(), 1 << 20, 0) if not self._closed else b""
            blamed = None if worker.stopped or self._closed else crash_report.culprit(running, dump)
            worker.death = Death(set(running.values()), blamed, worker.stopped)
            self._state.notify_all()
            self._close_idle(worker)
            if self._closed or self._worker is not worker:
                return
            if not worker.stopped:
                log.error(
                    "the store process died (exit status %s)%s; restarting it",
                    returncode,
                    f", killed by request {blamed}" if blamed in self._pending else "",
                )
            self._worker = None
            self._killing = False
            self._restarting = True
        try:  # not under the lock: a start takes about a second, and calls on the event loop take the lock
            started_worker: Child | None = self._start()
            failure = None
        except StoreError as error:
            started_worker, failure = None, error
        with self._state:
            self._restarting = False
            self._state.notify_all()
            if self._closed:  # closed meanwhile: nothing to serve
                if started_worker is not None:
                    started_worker.process.kill()
                return
            if started_worker is None:
                log.error("the store process could not restart: %s", failure)
                self._failure = (
                    failure
                    if isinstance(failure, StorageFull)
                    else StoreUnavailable("the store process could not restart; see the server log")
                )
                self._failed_at = time.monotonic()
                return
            self._worker = started_worker
            self.restarts += 1

    @staticmethod
    def _close_idle(worker: Child) -> None:
        """Close a dead child's sockets no call is using; each in use is closed by its caller,
        once it has seen the child gone (a socket the event loop watches must not be closed
        under it). The caller holds the lock."""
        worker.control.close()
        for lane in worker.idle.values():
            for sock in lane:
                sock.close()
            lane.clear()

    def close(self) -> None:
        with self._state:
            self._closed = True
            self._state.wait_for(lambda: not self._restarting)  # (its files are in use meanwhile)
            worker, self._worker = self._worker, None
            self._state.notify_all()
        if worker is not None:
            worker.control.shutdown(socket.SHUT_RDWR)  # the child sees EOF and exits
            try:
                worker.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
            with self._state:  # its watcher records the death: callers waiting on it are told the store closed
                self._state.wait_for(lambda: worker.death is not None, timeout=30)
        self._table_file.close()
        self._dump_file.close()

    # -- calls --------------------------------------------------------------------------------

    def _call_for(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], timeout: float | None) -> Call:
        """The call to send. A call with a `timeout` (a client's query) goes on the clients'
        connections, the rest on the server's own, so the server's calls keep moving while
        clients' queries fill theirs."""
        # unlocked: a restart may hold the lock
        if self._poisoned and _poison_key(method, args, kwargs) in self._poisoned:
            refused = QueryCrashed(CRASHED)
            refused.stopped_store = False  # (refused now: it costs no restart)
            raise refused
        request_id = next(self._ids)
        lane, deadline = ("internal", None) if timeout is None else ("client", time.monotonic() + timeout)
        return Call(method, (request_id, method, args, kwargs), lane, timeout, deadline)

    def _acquire(self, call: Call, wait: bool = True) -> tuple[Child, socket.socket] | None:
        """A connection of the call's lane on the running child, the call counted as sent;
        waits while the child restarts (writes also while a kill is due) and while the lane's
        connections are all busy. Without `wait` (on the event loop), None instead of waiting.
        A client's query that cannot start before its deadline ends with QueryTimeout."""
        with self._state:
            if call.is_write and self._full:
                self._reopen_after_full()
            while True:
                if self._closed:
                    raise StoreUnavailable("the store is closed")
                worker = self._worker
                ready = worker is not None and not (call.is_write and self._killing)
                if worker is not None and ready and worker.idle[call.lane]:
                    sock = worker.idle[call.lane].pop()
                    self._pending[call.id] = call
                    worker.writes += call.is_write
                    return worker, sock
                if not wait:
                    return None
                if worker is None and self._failure is not None:
                    self._start_again()
                    continue
                remaining = call.remaining()
                if remaining == 0.0:
                    raise QueryTimeout("the query waited past its limit for the store and was not run")
                self._state.wait(remaining)

    def _release(self, worker: Child, sock: socket.socket, call: Call) -> None:
        """The call was answered: its connection serves the next call."""
        with self._state:
            self._pending.pop(call.id, None)
            worker.writes -= call.is_write
            if worker.death is None:
                worker.idle[call.lane].append(sock)
            else:
                sock.close()
            self._state.notify_all()

    def _answered(self, worker: Child, sock: socket.socket, call: Call, reply: tuple[Any, ...]) -> Any:
        self._release(worker, sock, call)
        _, ok, value = reply
        if ok:
            return value
        if isinstance(value, StorageFull):
            with self._state:
                self._full = True
        raise value

    def _after_death(self, worker: Child, call: Call) -> None:
        """The child died with `call` sent: raise what the caller is told, or return to send it
        again (on the next child), where that is safe."""
        with self._state:
            self._pending.pop(call.id, None)
            self._state.wait_for(lambda: worker.death is not None)
            death = cast(Death, worker.death)
            if self._closed:
                raise StoreUnavailable("the store is closed")
            started = call.id in death.started
            if death.blamed == call.id:  # fail it now, before the restart: fast, and never sent again
                if (key := _poison_key(call.method, call.frame[2], call.frame[3])) is not None:
                    self._poisoned[key] = None
                    while len(self._poisoned) > MAX_POISONED:
                        self._poisoned.popitem(last=False)
                raise QueryCrashed(CRASHED)
            if call.deadline is not None and call.deadline <= time.monotonic():
                raise QueryTimeout("the query ran past its limit and was stopped")
            if started and call.is_write:
                raise StoreUnavailable("the store process stopped while this write ran; check whether it applied")
            if started and not death.stopped and death.blamed is None:
                raise StoreUnavailable(
                    "the store process stopped while this ran beside other operations, one of which stopped it; "
                    "it was not run again: send it again if it is not the one"
                )
            # not started, or running beside a known culprit or a deadline kill: sent again

    def _reopen_after_full(self) -> None:
        """RocksDB refuses every write after one failed for want of space, until it is opened
        again; reads go on. So a write after that fails at once while the disk has less than
        MIN_FREE_BYTES free, and otherwise stops the child: _after_exit starts another, which
        this write waits for. The caller holds the lock."""
        if shutil.disk_usage(self.path).free < MIN_FREE_BYTES:
            raise StorageFull(DISK_FULL)
        worker, self._full = self._worker, False
        if worker is not None and not worker.stopped:
            log.warning("space was freed on the store's disk; restarting the store process")
            worker.stopped, self._killing = True, True
            worker.process.kill()

    def _start_again(self) -> None:
        """After a failed restart (a full disk, say), try once more every RETRY_START seconds;
        calls meanwhile fail fast. The caller holds the lock."""
        assert self._failure is not None
        if time.monotonic() - self._failed_at < RETRY_START:
            raise self._failure
        try:
            self._worker = self._start()
        except StoreError as error:
            log.error("the store process still cannot start: %s", error)
            self._failed_at = time.monotonic()
            if isinstance(error, StorageFull):
                self._failure = error
            raise self._failure from None
        self._failure = None
        self.restarts += 1
        self._state.notify_all()

    def _timed_out(self, worker: Child, call: Call) -> QueryTimeout:
        self._stop_overdue(worker, call)
        return QueryTimeout(
            f"the query ran past its {call.limit or 0:g} s limit and was stopped; narrow it, add LIMIT, "
            "or raise the limit with the timeout parameter"
        )

    def _settle(self, worker: Child, sock: socket.socket, call: Call, reply: tuple[Any, ...] | None) -> None:
        """A reply nobody waits for any more has come (or its child died): free its connection."""
        if reply is not None:
            self._release(worker, sock, call)
        else:
            with self._state:
                self._pending.pop(call.id, None)

    def _stop_overdue(self, worker: Child, call: Call) -> None:
        """Kill the child running an overdue call, once running writes have finished."""
        with self._state:
            if self._pending.pop(call.id, None) is None or worker.death is not None:
                return  # it finished, or its process died, meanwhile
            self._killing = True
            while worker.writes and worker.death is None:
                self._state.wait()
            if worker.death is not None:
                return
            worker.stopped = True
        worker.process.kill()
