"""Which call killed the store process: the worker's evidence, read by its parent afterwards.

Some SPARQL is fatal to Oxigraph rather than wrong: deep nesting or long operator chains
overflow the native stack (300 nested blank nodes do at 8 MiB), and a big enough join runs out
of memory. Resending such a call after a restart would kill the store again, in a loop. So the
worker keeps two records that survive its death:

- a table in a shared file: per serving thread, its thread id and the request it is running
  (a write counts as running only once it holds the store's write lock);
- a `faulthandler` dump, which names the thread a fatal signal hit ("Current thread 0x...").
  Python gives only the thread that enabled faulthandler a stack to handle a stack overflow
  on, so each serving thread installs its own alternate signal stack (Linux).

The parent reads both after the exit: the thread the dump names, else the only call that was
running, is the culprit; calls that had not started are safe to send again.
"""

from __future__ import annotations

import ctypes
import faulthandler
import mmap
import os
import re
import struct
import sys
from typing import IO

_SLOT = struct.Struct("=Qq")  # thread id, request id (-1: idle)
_IDLE = -1
_ALT_STACK_BYTES = 1 << 16
_CURRENT_THREAD = re.compile(rb"Current thread 0x([0-9a-f]+)")
_alt_stacks: list[ctypes.Array[ctypes.c_char]] = []  # kept alive for the threads' lifetime


class RunningTable:
    """One slot per serving thread, in a file both processes map."""

    def __init__(self, file: IO[bytes], threads: int) -> None:
        self.threads = threads
        size = _SLOT.size * threads
        if os.fstat(file.fileno()).st_size < size:
            os.ftruncate(file.fileno(), size)
        self._map = mmap.mmap(file.fileno(), size)

    def reset(self) -> None:
        for slot in range(self.threads):
            _SLOT.pack_into(self._map, slot * _SLOT.size, 0, _IDLE)

    def mark(self, slot: int, thread_id: int, request_id: int) -> None:
        _SLOT.pack_into(self._map, slot * _SLOT.size, thread_id, request_id)

    def clear(self, slot: int, thread_id: int) -> None:
        self.mark(slot, thread_id, _IDLE)

    def running(self) -> dict[int, int]:
        """Thread id -> request id, for every thread that was running a call."""
        slots = (_SLOT.unpack_from(self._map, slot * _SLOT.size) for slot in range(self.threads))
        return {thread: request for thread, request in slots if request != _IDLE}


class _StackT(ctypes.Structure):
    _fields_ = [("ss_sp", ctypes.c_void_p), ("ss_flags", ctypes.c_int), ("ss_size", ctypes.c_size_t)]


def prepare_thread() -> None:
    """Give the calling thread a stack for signal handlers, so a stack overflow is reported."""
    if sys.platform != "linux":
        return  # no dump then: the parent falls back to "the only call running"
    buffer = ctypes.create_string_buffer(_ALT_STACK_BYTES)
    _alt_stacks.append(buffer)
    stack = _StackT(ctypes.cast(buffer, ctypes.c_void_p), 0, _ALT_STACK_BYTES)
    ctypes.CDLL(None, use_errno=True).sigaltstack(ctypes.byref(stack), None)


def report_fatal_signals(file: IO[str]) -> None:
    faulthandler.enable(file=file, all_threads=True)


def crashed_thread(dump: bytes) -> int | None:
    """The id of the thread a fatal signal hit, from a faulthandler dump."""
    match = _CURRENT_THREAD.search(dump)
    return int(match.group(1), 16) if match else None


def culprit(running: dict[int, int], dump: bytes) -> int | None:
    """The request that killed the process: the one the dump's thread was running; without a
    dump (killed outright, e.g. out of memory), the only one running."""
    thread = crashed_thread(dump)
    if thread is not None:
        return running.get(thread)
    return next(iter(running.values())) if len(running) == 1 else None
