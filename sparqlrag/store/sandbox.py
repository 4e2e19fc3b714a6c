"""No network for the code that runs SPARQL: the kernel refuses it sockets.

Oxigraph evaluates SERVICE and LOAD by opening connections itself. Guessing from the query
text whether it will do so means re-lexing SPARQL, and a lexer always lags the real parser
(a `#` inside an escaped IRI once hid a SERVICE from ours). So when remote access is off,
the threads that run SPARQL carry a seccomp filter under which `socket()` fails: SERVICE and
LOAD then fail before a name is resolved or a packet leaves, whatever the query looks like.
The store's worker process is filtered whole; an in-process store runs SPARQL that mentions
SERVICE or LOAD on a small pool of filtered threads (a filter is per thread, so the rest of the
process keeps its network), and other SPARQL, which cannot reach out, where it is called.

The filter answers EAFNOSUPPORT ("address family not supported"). Where no filter can be installed (not Linux on
x86-64 or
aarch64, or a kernel that refuses), `offline_pool()` is None and the store refuses any text
that contains SERVICE or LOAD at all: cruder, but just as closed.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import re
import struct
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import TypeVar

T = TypeVar("T")

DENIED_ERRNO = errno.EAFNOSUPPORT

# seccomp-BPF: the kernel's classic BPF, run on struct seccomp_data {int nr; u32 arch; ...}
_LOAD_WORD, _JUMP_EQUAL, _JUMP_AT_LEAST, _RETURN = 0x20, 0x15, 0x35, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
# per machine: the audit arch, the socket() and socketpair() syscall numbers, and the first
# number of the x32 ABI (x86-64 processes can make x32 calls under the same arch)
_MACHINES = {
    "x86_64": (0xC000003E, (41, 53), 0x40000000),
    "aarch64": (0xC00000B7, (198, 199), None),
}

_state = threading.local()
_process_denied = False


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _instruction(code: int, jump_true: int, jump_false: int, value: int) -> bytes:
    return struct.pack("=HBBI", code, jump_true, jump_false, value)


def _filter(arch: int, syscalls: tuple[int, ...], x32: int | None) -> list[bytes]:
    """Deny when the arch is foreign, the call is x32, or it is one of `syscalls`; allow the rest."""
    checks = ([(_JUMP_AT_LEAST, x32)] if x32 is not None else []) + [(_JUMP_EQUAL, nr) for nr in syscalls]
    program = [_instruction(_LOAD_WORD, 0, 0, 4), _instruction(_JUMP_EQUAL, 0, len(checks) + 2, arch)]
    program.append(_instruction(_LOAD_WORD, 0, 0, 0))
    program += [_instruction(op, len(checks) - index, 0, value) for index, (op, value) in enumerate(checks)]
    return program + [_instruction(_RETURN, 0, 0, _ALLOW), _instruction(_RETURN, 0, 0, _ERRNO | DENIED_ERRNO)]


class SandboxUnavailable(OSError):
    """This system cannot install the filter (another OS or machine, or the kernel refused)."""


def deny_network(*, whole_process: bool = False) -> None:
    """Forbid sockets to the calling thread and every thread it starts from now on.

    `whole_process` says the caller has started no other thread yet (the store worker's
    main thread), so the whole process is covered. Raises SandboxUnavailable.
    """
    global _process_denied
    machine = _MACHINES.get(platform.machine()) if sys.platform == "linux" else None
    if machine is None:
        raise SandboxUnavailable(f"no socket filter for {sys.platform} on {platform.machine()}")
    code = b"".join(_filter(*machine))
    buffer = ctypes.create_string_buffer(code, len(code))
    program = _Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    if prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) or prctl(
        _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(program), 0, 0
    ):
        raise SandboxUnavailable(ctypes.get_errno(), "the kernel refused the socket filter")
    _state.denied = True
    _process_denied = _process_denied or whole_process


def network_denied() -> bool:
    """Whether the calling thread runs under the filter."""
    return _process_denied or getattr(_state, "denied", False)


class OfflinePool:
    """Threads under the filter, for an in-process store's SPARQL."""

    def __init__(self, threads: int = 8) -> None:
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="sparql-offline", initializer=deny_network)

    def run(self, function: Callable[..., T], *args: object) -> T:
        return self._executor.submit(function, *args).result()


@cache
def offline_pool() -> OfflinePool | None:
    """The process's pool of filtered threads, or None when this system cannot filter."""
    probe: list[BaseException] = []

    def attempt() -> None:
        try:
            deny_network()
        except SandboxUnavailable as error:
            probe.append(error)

    thread = threading.Thread(target=attempt, name="sandbox-probe")
    thread.start()
    thread.join()
    return None if probe else OfflinePool()


_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_REMOTE_WORDS = re.compile(r"SERVICE|LOAD", re.IGNORECASE)


def mentions_remote_access(sparql: str) -> bool:
    """Whether SERVICE or LOAD appears anywhere in the text, in any case, also once \\u escapes
    are decoded (SPARQL 1.1 allows them anywhere; Oxigraph decodes them only in IRIs and
    strings). No lexing, so no context can hide them: a comment or a string that merely says
    "download" counts too. Text without them cannot make Oxigraph open a connection."""
    if _REMOTE_WORDS.search(sparql):
        return True
    if "\\u" not in sparql and "\\U" not in sparql:
        return False
    return bool(
        _REMOTE_WORDS.search(_ESCAPE.sub(lambda m: chr(min(int(m.group(1) or m.group(2), 16), sys.maxunicode)), sparql))
    )
