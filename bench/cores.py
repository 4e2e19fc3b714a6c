"""Knowledge core throughput: export, import, and import under another base IRI, against the
ingest that built the collection (what an import saves).

    .venv/bin/python bench/cores.py [--markdown]

The collection: the MuSiQue passages ingested offline (extraction, embedding, indexing), with
20 questions answered so that it has traces too. Each import goes into an empty data
directory; the imported collection answers a question to show it is whole.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
