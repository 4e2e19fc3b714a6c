"""Reading an ontology file in any of the formats tools write it in, into RDF triples.

pyoxigraph parses Turtle, N-Triples, RDF/XML and JSON-LD; OWL/XML, which no RDF parser reads,
goes through owlready2 and comes back as N-Triples. The format comes from the media type, else
the file name, else a look at the first bytes.
"""

from __future__ import annotations

import io
import re
from pathlib import PurePath

from pyoxigraph import RdfFormat, Triple, parse

from sparqlrag.ontology.formats import EXTENSIONS, MEDIA_TYPES, OWL_XML
from sparqlrag.ontology.owl import OntologyError, read_owl_xml
from sparqlrag.store.base import DataSyntaxError
from sparqlrag.store.xml_entities import check_entity_expansion

_XML_ELEMENT = re.compile(rb"<[A-Za-z_][\w.-]*(?::[A-Za-z_][\w.-]*)?[\s/>]")  # not "<http://...>" (N-Triples)
_OWL_XML_ROOT = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?Ontology[\s>][^>]*http://www\.w3\.org/2002/07/owl#", re.S)


def detect_format(data: bytes, media_type: str | None = None, filename: str | None = None) -> RdfFormat | str:
    if media_type and media_type in MEDIA_TYPES:
        return MEDIA_TYPES[media_type]
    suffix = PurePath(filename).suffix.lower().lstrip(".") if filename else ""
    if suffix in EXTENSIONS:
        return EXTENSIONS[suffix]
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith((b"{", b"[")):
        return RdfFormat.JSON_LD
    if head.startswith((b"<?xml", b"<!")) or _XML_ELEMENT.match(head):
        return OWL_XML if _OWL_XML_ROOT.search(head) and b"rdf:RDF" not in head else RdfFormat.RDF_XML
    return RdfFormat.TURTLE  # N-Triples is Turtle too


def read_ontology(
    data: bytes, media_type: str | None = None, filename: str | None = None, format: RdfFormat | str | None = None
) -> list[Triple]:
    """The ontology's triples. Raises OntologyError naming the format and the parser's complaint."""
    return read_with_prefixes(data, media_type, filename, format)[0]


def read_with_prefixes(
    data: bytes, media_type: str | None = None, filename: str | None = None, format: RdfFormat | str | None = None
) -> tuple[list[Triple], dict[str, str]]:
    """The triples and the prefixes the file declares (Turtle, RDF/XML), to write it back with."""
    fmt = format or detect_format(data, media_type, filename)
    if fmt == OWL_XML:
        return read_owl_xml(data), {}
    assert isinstance(fmt, RdfFormat)
    try:
        if fmt == RdfFormat.RDF_XML:
            check_entity_expansion(data)
        parser = parse(io.BytesIO(data), format=fmt)
        triples = [quad.triple for quad in parser]
    except SyntaxError as error:
        raise OntologyError(f"not valid {fmt.name}: {error}") from None
    except DataSyntaxError as error:
        raise OntologyError(str(error)) from None
    return triples, {name: iri for name, iri in parser.prefixes.items() if name}
