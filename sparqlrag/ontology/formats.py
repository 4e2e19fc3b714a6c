"""The formats an ontology is read in, by media type, file extension and name (what the CLI's
--format takes): kept apart from the readers so that naming them costs no parser's import."""

from __future__ import annotations

from pyoxigraph import RdfFormat

OWL_XML = "owlxml"  # not an RdfFormat: owlready2's name for it

MEDIA_TYPES: dict[str, RdfFormat | str] = {
    "text/turtle": RdfFormat.TURTLE,
    "application/x-turtle": RdfFormat.TURTLE,
    "application/n-triples": RdfFormat.N_TRIPLES,
    "application/rdf+xml": RdfFormat.RDF_XML,
    "application/ld+json": RdfFormat.JSON_LD,
    "application/owl+xml": OWL_XML,
}
EXTENSIONS: dict[str, RdfFormat | str] = {
    "ttl": RdfFormat.TURTLE,
    "nt": RdfFormat.N_TRIPLES,
    "rdf": RdfFormat.RDF_XML,
    "jsonld": RdfFormat.JSON_LD,
    "owx": OWL_XML,
}  # (".owl" and ".xml" are RDF/XML or OWL/XML: sniffed)
FORMAT_NAMES: dict[str, RdfFormat | str] = {
    "turtle": RdfFormat.TURTLE,
    "ntriples": RdfFormat.N_TRIPLES,
    "rdfxml": RdfFormat.RDF_XML,
    "jsonld": RdfFormat.JSON_LD,
    "owlxml": OWL_XML,
}
