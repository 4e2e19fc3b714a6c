"""What a decode may cost, and the errors of a document that cannot be read or costs too much."""

from __future__ import annotations

from dataclasses import dataclass


class DecodeError(ValueError):
    """The bytes are not a document of the declared kind; the message says what is wrong."""


class DecodeLimitExceeded(DecodeError):
    """Decoding the document would take more than a limit allows; the message names the setting."""


@dataclass(frozen=True)
class DecodeLimits:
    """What decoding one document may take (the settings decode_*): `seconds` of time (wall
    clock and CPU), `memory_bytes` beyond the decoding process's own, `unpacked_bytes` that its
    compressed parts (a DOCX's members, a PDF's streams) may expand to, and `blocks`
    (paragraphs, PDF lines, table rows)."""

    seconds: float = 60.0
    memory_bytes: int = 1024 * 1024 * 1024
    unpacked_bytes: int = 256 * 1024 * 1024
    blocks: int = 200_000

    def too_many_blocks(self) -> DecodeLimitExceeded:
        return DecodeLimitExceeded(f"the document has over {self.blocks} paragraphs, lines or rows (decode_max_blocks)")

    def too_large(self, what: str) -> DecodeLimitExceeded:
        return DecodeLimitExceeded(f"{what} expands to over {self.unpacked_bytes} bytes (decode_max_unpacked_bytes)")
