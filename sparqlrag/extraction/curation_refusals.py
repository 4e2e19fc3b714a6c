"""What curation (curation.py) refuses, apart from it so that naming these costs no import of the pipeline."""

from __future__ import annotations


class UnknownEntity(LookupError):
    """No entity of the collection has that IRI or name."""


class CurationRefused(ValueError):
    """The decision contradicts what the collection holds (two names of one thing, two classes)."""
