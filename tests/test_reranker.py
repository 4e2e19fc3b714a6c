"""Rerankers: flashrank with a tiny ONNX cross-encoder built here, and the embedding-cosine fallback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from sparqlrag.models.embedder import Embedder, ModelUnavailable
from sparqlrag.models.reranker import CosineReranker, CrossEncoderReranker, build_reranker

VOCAB = ["[PAD]", "[UNK]", "paris", "france", "capital", "berlin", "germany", "bread", "recipe"]
WEIGHTS = {"paris": 3.0, "france": 2.0, "capital": 1.0}  # what the toy model "knows" is relevant


def build_tiny_cross_encoder(models_dir: Path, name: str = "ms-marco-TinyBERT-L-2-v2") -> Path:
    """A WordLevel tokenizer and an ONNX graph: logit = sum of token weights over the unmasked tokens."""
    from flashrank.Config import model_file_map

    target = models_dir / "flashrank" / name
    target.mkdir(parents=True)
    tokenizer = Tokenizer(models.WordLevel({t: i for i, t in enumerate(VOCAB)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(target / "tokenizer.json"))
    (target / "config.json").write_text(json.dumps({"pad_token_id": 0}))
    (target / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 64, "pad_token": "[PAD]"}))
    (target / "special_tokens_map.json").write_text(json.dumps({"pad_token": "[PAD]", "unk_token": "[UNK]"}))
    weights = np.array([[WEIGHTS.get(t, 0.0)] for t in VOCAB], dtype=np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["W", "input_ids"], ["per_token"]),
            helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
            helper.make_node("Unsqueeze", ["mask_f", "axis2"], ["mask3"]),
            helper.make_node("Mul", ["per_token", "mask3"], ["masked"]),
            helper.make_node("ReduceSum", ["masked", "axis1"], ["logits"], keepdims=0),
        ],
        "tiny-cross-encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "seq"]),
        ],  # as BERT takes
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        [
            helper.make_tensor("W", TensorProto.FLOAT, weights.shape, weights.flatten()),
            helper.make_tensor("axis1", TensorProto.INT64, [1], [1]),
            helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
        ],
    )
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8),
        str(target / model_file_map[name]),
    )
    return target


def test_flashrank_cross_encoder_scores_with_the_model(tmp_path: Path, embedder: Embedder) -> None:
    build_tiny_cross_encoder(tmp_path)
    reranker = build_reranker("ms-marco-TinyBERT-L-2-v2", models_dir=tmp_path, embedder=embedder)
    assert isinstance(reranker, CrossEncoderReranker) and reranker.name == "flashrank:ms-marco-TinyBERT-L-2-v2"
    passages = ["A bread recipe", "Berlin is the capital of Germany", "Paris is the capital of France"]
    scores = reranker.score("capital of France", passages)
    # query tokens count for every pair; passages add their own weights: paris+france+capital > capital > none
    assert list(np.argsort(-scores)) == [2, 1, 0]
    expected_logits = np.array([3.0, 4.0, 9.0])  # query "capital of france" = 3, plus each passage
    assert np.allclose(scores, 1 / (1 + np.exp(-expected_logits)), atol=1e-5)
    assert reranker.score("anything", []).shape == (0,)


def test_missing_cross_encoder_falls_back_to_cosine(tmp_path: Path, embedder: Embedder) -> None:
    with pytest.raises(ModelUnavailable, match="offline mode forbids downloading"):
        CrossEncoderReranker("ms-marco-TinyBERT-L-2-v2", models_dir=tmp_path)
    with pytest.raises(ModelUnavailable, match="no reranker 'nonsense'"):
        CrossEncoderReranker("nonsense", models_dir=tmp_path)
    reranker = build_reranker("ms-marco-TinyBERT-L-2-v2", models_dir=tmp_path, embedder=embedder)
    assert isinstance(reranker, CosineReranker)
    scores = reranker.score("capital of France", ["A bread recipe", "Paris is the capital of France"])
    assert scores[1] > scores[0] and -1.0 <= scores.min() and scores.max() <= 1.0
