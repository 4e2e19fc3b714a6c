"""sparqlrag: a single-process, SPARQL-first knowledge server (docs/architecture.md)."""

__version__ = "0.1.0"
