"""Ontology subset selection throughput: chunks/s through `Selector.select` for a 1,000-element
ontology (goal >= 50 chunks/s on 2 cores).

    .venv/bin/python bench/ontology_selection.py [--batch 16] [--markdown]

The ontology is every ontology in ../shared/data/ontologies read into one model (FOAF, ORG,
PROV-O, SKOS, OWL-Time, SOSA, DCMI Terms, the schema.org subset), padded to 1,000 elements with
subclasses named after pairs of existing classes. The chunks are ../shared/data/corpus split as
ingestion splits it (2,000 characters), selected 16 at a time as ingestion does (an extractor
is handed a document's chunks before it reads them). Each run starts with an empty embedding
cache; "warm" runs the same chunks again (what repeated phrases across a corpus approach).
"one-chunk documents" hands each chunk over as its own document, all at once, as an ingest of
many short documents does: what the extractor's queue batches while a selection runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
