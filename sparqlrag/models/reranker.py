"""Passage scoring against a query: a flashrank cross-encoder when its model is on disk,
otherwise the cosine of embeddings (no download needed)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from sparqlrag.models.embedder import Embedder, ModelUnavailable

log = logging.getLogger("sparqlrag.models")
DEFAULT_RERANKER = "ms-marco-TinyBERT-L-2-v2"


class Reranker(Protocol):
    name: str

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One relevance score per passage, higher is better."""
        ...


class CosineReranker:
    """Cosine similarity of normalized embeddings: the offline fallback."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.name = f"cosine:{embedder.model_name}"

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        vectors = self.embedder.embed([query, *passages])
        scores: np.ndarray = vectors[1:] @ vectors[0]
        return scores


class CrossEncoderReranker:
    """A flashrank cross-encoder (`models_dir/flashrank/<model>/`)."""

    def __init__(self, model: str, *, models_dir: Path, offline: bool = True, max_length: int = 512) -> None:
        from flashrank import Ranker
        from flashrank.Config import model_file_map

        if model not in model_file_map:
            raise ModelUnavailable(f"flashrank has no reranker {model!r}; known: {', '.join(sorted(model_file_map))}")
        cache_dir = models_dir / "flashrank"
        if offline and not (cache_dir / model / model_file_map[model]).is_file():
            raise ModelUnavailable(f"reranker {model!r} is not in {cache_dir} and offline mode forbids downloading it")
        self.name = f"flashrank:{model}"
        self._ranker = Ranker(model_name=model, cache_dir=str(cache_dir), max_length=max_length, log_level="WARNING")

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        from flashrank import RerankRequest

        if not passages:
            return np.zeros(0, dtype=np.float32)
        ranked = self._ranker.rerank(RerankRequest(query, [{"id": i, "text": p} for i, p in enumerate(passages)]))
        scores = np.zeros(len(passages), dtype=np.float32)
        for item in ranked:
            scores[item["id"]] = float(item["score"])
        return scores


def build_reranker(model: str | None, *, models_dir: Path, embedder: Embedder, offline: bool = True) -> Reranker:
    """The cross-encoder `model` if it can be loaded, else embedding cosine (said in the log)."""
    if model:
        try:
            return CrossEncoderReranker(model, models_dir=models_dir, offline=offline)
        except ModelUnavailable as error:
            log.info("reranking by embedding cosine: %s", error)
    return CosineReranker(embedder)
