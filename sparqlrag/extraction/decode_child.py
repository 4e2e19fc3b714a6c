"""The decoding process (started by decode_pool.py, never by hand): it decodes one document at a
time from its standard input and answers on its standard output, under limits set on itself.

Its address space may grow `memory_bytes` past what it holds when ready, and each document may
use `seconds` of CPU (the kernel stops the process with SIGXCPU past that); it has no network.
A frame is a 4-byte big-endian length and that many bytes. A job is two frames (a JSON header:
media type and file name; the document's bytes); the answer is one JSON frame, the decoded
document or {"error", "limit"}, with the process's peak memory so the pool can retire a
process that grew.
"""

from __future__ import annotations

import json
import resource
import struct
import sys
from dataclasses import asdict
from typing import IO, Any

from sparqlrag.extraction.decode_limits import DecodeError, DecodeLimitExceeded, DecodeLimits
from sparqlrag.extraction.decoders import decode
from sparqlrag.store.sandbox import SandboxUnavailable, deny_network

HEADER = struct.Struct(">I")
READY = b"ready"  # the first frame: imports done, limits set


def read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame, or None at the end of the stream."""
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    size = HEADER.unpack(head)[0]
    body = stream.read(size)
    return body if len(body) == size else None


def frame(body: bytes) -> bytes:
    return HEADER.pack(len(body)) + body


def _address_space() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def _within_hard(kind: int, soft: int) -> tuple[int, int]:
    """(soft, hard) for setrlimit: `soft`, unless the hard limit someone set is lower."""
    hard = resource.getrlimit(kind)[1]
    return (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard)


def _answer(limits: DecodeLimits, header: dict[str, Any], data: bytes) -> dict[str, Any]:
    try:
        return {"decoded": asdict(decode(data, header.get("media_type"), header.get("filename"), limits))}
    except DecodeLimitExceeded as error:
        return {"error": str(error), "limit": True}
    except DecodeError as error:
        return {"error": str(error), "limit": False}
    except MemoryError:
        return {
            "error": f"decoding needs more than {limits.memory_bytes} bytes of memory (decode_memory_bytes)",
            "limit": True,
        }
    except RecursionError:
        return {"error": "the document nests too deeply to be read", "limit": False}


def main(argv: list[str]) -> None:
    limits = DecodeLimits(**json.loads(argv[0]))
    import docx  # noqa: F401
    import pdfminer.pdfinterp  # noqa: F401
    import trafilatura  # noqa: F401

    from sparqlrag.extraction import docx_text, html_text, pdf_text  # noqa: F401  (loaded before the limits)

    try:
        deny_network(whole_process=True)
    except SandboxUnavailable:
        pass  # (decoders open no sockets; the filter is a second wall where the kernel has it)
    resource.setrlimit(resource.RLIMIT_AS, _within_hard(resource.RLIMIT_AS, _address_space() + limits.memory_bytes))
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sink.write(frame(READY))
    sink.flush()
    while (header := read_frame(source)) is not None and (data := read_frame(source)) is not None:
        used = resource.getrusage(resource.RUSAGE_SELF)
        resource.setrlimit(
            resource.RLIMIT_CPU,
            _within_hard(resource.RLIMIT_CPU, int(used.ru_utime + used.ru_stime + limits.seconds) + 1),
        )
        answer = _answer(limits, json.loads(header), data)
        answer["peak_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        sink.write(frame(json.dumps(answer).encode()))
        sink.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
