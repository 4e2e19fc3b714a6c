"""Rank fusion and MMR, the arithmetic Document RAG and Graph RAG rank passages with."""

from __future__ import annotations

import numpy as np
import pytest

from sparqlrag.retrieval.document_rag import mmr, rrf


def test_hybrid_fuses_both_rankings() -> None:
    fused = rrf([["a", "b", "c"], ["c", "a"]], [1.0, 1.0])
    assert [item for item, _ in fused] == ["a", "c", "b"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert [item for item, _ in rrf([["a", "b"], ["b", "a"]], [1.0, 3.0])] == ["b", "a"]  # weights matter


def test_mmr_prefers_variety() -> None:
    vectors = np.array([[1.0, 0.0], [0.999, 0.045], [0.0, 1.0]])
    assert mmr(np.array([1.0, 0.95, 0.5]), vectors, 2, lam=0.5) == [0, 2]
    assert mmr(np.array([1.0, 0.95, 0.5]), vectors, 2, lam=1.0) == [0, 1]
