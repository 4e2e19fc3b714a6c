"""Ingest throughput: chunks/s and facts/s, end to end (decode, chunk, extract, embed, index, store).

    .venv/bin/python bench/ingest.py [--markdown]

Runs: the offline extractor on ../shared/data/corpus (country profiles and speeches, 2,000-char
chunks) and on the MuSiQue passages, and the pre-extracted triples import on MuSiQue. Each run
starts from an empty data directory. "extractor only" times the offline extractor alone on the
same chunks, to tell extraction from embedding and storage.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
