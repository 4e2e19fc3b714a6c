"""sparqlrag: a single-process, SPARQL-first knowledge server (see DESIGN.md)."""

__version__ = "0.1.0"
