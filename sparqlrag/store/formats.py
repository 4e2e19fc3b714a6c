"""Media types, format names and HTTP content negotiation for SPARQL results and RDF."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pyoxigraph import QueryResultsFormat, RdfFormat

F = TypeVar("F")  # what an offer stands for: a format, or a page kind

# Server preference order: the first entry is the default when the client states none.
RESULTS_FORMATS: list[tuple[str, QueryResultsFormat]] = [
    ("application/sparql-results+json", QueryResultsFormat.JSON),
    ("application/sparql-results+xml", QueryResultsFormat.XML),
    ("text/csv", QueryResultsFormat.CSV),
    ("text/tab-separated-values", QueryResultsFormat.TSV),
    ("application/json", QueryResultsFormat.JSON),
    ("application/xml", QueryResultsFormat.XML),
    ("text/xml", QueryResultsFormat.XML),
]

GRAPH_FORMATS: list[tuple[str, RdfFormat]] = [
    ("text/turtle", RdfFormat.TURTLE),
    ("application/n-triples", RdfFormat.N_TRIPLES),
    ("application/rdf+xml", RdfFormat.RDF_XML),
    ("application/ld+json", RdfFormat.JSON_LD),
    ("application/trig", RdfFormat.TRIG),
    ("application/n-quads", RdfFormat.N_QUADS),
    ("application/x-turtle", RdfFormat.TURTLE),
    ("text/plain", RdfFormat.N_TRIPLES),
    ("application/xml", RdfFormat.RDF_XML),
    ("application/json", RdfFormat.JSON_LD),
]

DATASET_FORMATS: list[tuple[str, RdfFormat]] = [
    ("application/trig", RdfFormat.TRIG),
    ("application/n-quads", RdfFormat.N_QUADS),
]
TRIPLE_FORMATS = [(m, f) for m, f in GRAPH_FORMATS if not f.supports_datasets]  # what one graph is uploaded as

RDF_EXTENSIONS = frozenset({"ttl", "trig", "nt", "nq", "rdf", "owl", "xml", "jsonld", "n3"})

FORMAT_NAMES: dict[str, QueryResultsFormat | RdfFormat] = {
    "json": QueryResultsFormat.JSON,
    "xml": QueryResultsFormat.XML,
    "csv": QueryResultsFormat.CSV,
    "tsv": QueryResultsFormat.TSV,
    "turtle": RdfFormat.TURTLE,
    "trig": RdfFormat.TRIG,
    "ntriples": RdfFormat.N_TRIPLES,
    "nquads": RdfFormat.N_QUADS,
    "rdfxml": RdfFormat.RDF_XML,
    "jsonld": RdfFormat.JSON_LD,
}


@dataclass(frozen=True)
class MediaRange:
    type: str
    subtype: str
    q: float

    def specificity(self, media_type: str) -> int:
        """-1 if this range does not match `media_type`, else 0 (*/*), 1 (type/*) or 2 (exact)."""
        main, _, sub = media_type.partition("/")
        if self.type == "*":
            return 0
        if self.type != main:
            return -1
        if self.subtype == "*":
            return 1
        return 2 if self.subtype == sub else -1


def parse_accept(header: str | None) -> list[MediaRange]:
    """Media ranges of an Accept header; malformed entries are skipped, as browsers expect."""
    ranges = []
    for item in (header or "").split(","):
        media, *params = item.split(";")
        main, slash, sub = media.strip().lower().partition("/")
        if not slash or not main or not sub:
            continue
        q = 1.0
        for param in params:
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    q = min(max(float(value), 0.0), 1.0)
                except ValueError:
                    q = 0.0
        ranges.append(MediaRange(main, sub, q))
    return ranges


def negotiate(accept: str | None, offers: list[tuple[str, F]]) -> tuple[str, F] | None:
    """The offer the client prefers (highest q of its most specific matching range; ties go to
    server order), the first offer when Accept is absent, or None when nothing is acceptable."""
    ranges = parse_accept(accept)
    if not ranges:
        return offers[0]
    best: tuple[float, str, F] | None = None
    for media_type, fmt in offers:
        matches = [(r.specificity(media_type), r.q) for r in ranges if r.specificity(media_type) >= 0]
        if not matches:
            continue
        q = max(matches)[1]
        if q > 0 and (best is None or q > best[0]):
            best = (q, media_type, fmt)
    return None if best is None else (best[1], best[2])


def media_type_of(content_type: str | None) -> str:
    """The bare, lower-case media type of a Content-Type header ('' when absent)."""
    return (content_type or "").split(";")[0].strip().lower()


def charset_of(content_type: str | None) -> str | None:
    for param in (content_type or "").split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "charset":
            return value.strip().strip('"').lower()
    return None


def rdf_format_for(content_type: str | None) -> RdfFormat | None:
    """The RDF format of an upload's Content-Type, or None when it is not an RDF syntax."""
    media_type = media_type_of(content_type)
    for offered, fmt in GRAPH_FORMATS:
        if offered == media_type:
            return fmt
    return RdfFormat.from_media_type(media_type) if media_type else None


def rdf_format_for_path(path: Path, name: str | None = None) -> RdfFormat:
    """The RDF format named on the command line, else guessed from the file extension."""
    if name:
        fmt = FORMAT_NAMES.get(name)
        if not isinstance(fmt, RdfFormat):
            raise ValueError(f"unknown RDF format {name!r}: use one of {', '.join(rdf_format_names())}")
        return fmt
    suffix = path.suffix.lstrip(".").lower()
    fmt = RdfFormat.from_extension(suffix) if suffix in RDF_EXTENSIONS else None
    if fmt is None:
        raise ValueError(f"cannot tell the RDF format of {path} from its extension; pass --format")
    return fmt


def rdf_format_names() -> list[str]:
    return [name for name, fmt in FORMAT_NAMES.items() if isinstance(fmt, RdfFormat)]


def with_charset(media_type: str) -> str:
    """Content-Type value for a textual RDF or results body."""
    return media_type if "charset" in media_type else f"{media_type}; charset=utf-8"
