"""A faster first pass over big local vector collections: the rows that may be nearest a query.

A search reads every stored vector. At a million facts that is 1.5 GB of float32 a query,
~165 ms here, for the five facts that seed a Graph RAG walk; the scan is bound by memory, not
arithmetic. From SHORTLIST_ROWS rows on, a matrix gets a copy in float16 (faiss's scalar
quantizer: half the bytes, read with SIMD on every core): a full scan of it shortlists
CANDIDATES_PER_RESULT rows per result wanted, which the caller scores exactly in float32
(~48 ms a query at 1M; recall@5 against the exact search 100% on 200 MetaQA questions).
Nothing is left out of the scan, so float16 rounding (~1e-3) can only reorder rows inside the
shortlist, never drop a near one. Approximate indexes (IVF, HNSW) were measured and rejected
(bench/RESULTS.md): a question is far from every cluster of fact texts, and recall@5 fell
to 64-94%.

The copy is derived from the matrix (built when a search first needs it, then kept up to date
by its writes), so nothing about it is stored or can go stale on disk.
"""

from __future__ import annotations

from typing import Any

import numpy as np

SHORTLIST_ROWS = 200_000  # below it, float32 is read whole (~25 ms at 200k) and search stays exact
CANDIDATES_PER_RESULT = 4


class Shortlist:
    """Not safe to search while it is written: the caller serialises both."""

    def __init__(self, rows: np.ndarray) -> None:
        import faiss  # 0.2 s to load: only big collections need it

        self._index: Any = faiss.IndexIDMap2(
            faiss.IndexScalarQuantizer(rows.shape[1], faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
        )
        self.add(np.arange(len(rows)), rows)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def add(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        """Index rows not in it (remove a row before writing it again)."""
        self._index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(rows, dtype=np.int64))

    def remove(self, rows: np.ndarray) -> None:
        if len(rows):
            self._index.remove_ids(np.asarray(rows, dtype=np.int64))

    def candidates(self, queries: np.ndarray, limit: int) -> np.ndarray:
        """(queries, limit * CANDIDATES_PER_RESULT) row numbers, nearest first in float16; -1
        pads a short list."""
        _, rows = self._index.search(np.ascontiguousarray(queries, dtype=np.float32), limit * CANDIDATES_PER_RESULT)
        return np.asarray(rows)
