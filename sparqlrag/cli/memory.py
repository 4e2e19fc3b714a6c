"""Fewer malloc arenas: the process's memory follows its data, not its thread count.

glibc gives each thread that allocates under contention an arena of its own (up to 8 per core)
and returns little of it: ONNX Runtime's buffers, allocated from the thread pool that runs
embeddings, stayed behind in them (bench/RESULTS.md, scale.py). Two arenas cost no measured
speed. Set for this process with mallopt, and for the store worker it starts through the
environment; a value the user set is left alone. Elsewhere than glibc this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_ARENA_MAX = -8  # glibc's malloc.h
ARENAS = "2"


def bound_malloc_arenas() -> None:
    if "MALLOC_ARENA_MAX" in os.environ:
        return
    os.environ["MALLOC_ARENA_MAX"] = ARENAS
    library = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(library) if library else None
        if libc is not None and hasattr(libc, "mallopt"):
            libc.mallopt(M_ARENA_MAX, int(ARENAS))
    except OSError:
        return
