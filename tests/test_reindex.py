"""`sparqlrag reindex`: the derived indexes rebuilt from the store alone are the ones ingest built."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import numpy as np

from sparqlrag.config import Settings
from sparqlrag.extraction.plans import Source
from sparqlrag.services import Services
from sparqlrag.store import EmbeddedStore
from tests.conftest import SPARQLRAG

CORPUS = Path(__file__).resolve().parents[1] / "sparqlrag" / "demo" / "corpus"


def indexes(services: Services) -> dict[str, object]:
    """Every point of every vector set (sorted by IRI and facet), and
    the keyword index's count and best hits for a few queries."""
    seen: dict[str, object] = {}
    for kind in ("chunks", "entities", "facts"):
        vectors, payloads = services.vectors.points("default", kind)  # type: ignore[arg-type]
        order = sorted(range(len(payloads)), key=lambda i: (payloads[i]["iri"], payloads[i].get("facet", "")))
        seen[kind] = [payloads[i] for i in order]
        seen[kind + " vectors"] = vectors[order]
    seen["keyword rows"] = services.keywords.count("default")
    seen["keyword hits"] = [services.keywords.search("default", q, 5) for q in ("CERN Geneva", "web browser", "W3C")]
    return seen


def test_reindex_after_the_vector_folder_is_lost_restores_every_index(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    settings = Settings(data_dir=data, base_iri="http://kb.example/", reranker_model=None)
    services = Services.open(settings, EmbeddedStore(settings.store_path))
    try:
        sources = [Source(p.name, p.read_bytes()) for p in sorted(CORPUS.glob("*.md"))]
        asyncio.run(services.pipeline.ingest_many("default", sources))
        built = indexes(services)
    finally:
        services.close()
        services.store.close()
    assert len(built["chunks"]) >= 5 and len(built["entities"]) > 20 and len(built["facts"]) > 20  # type: ignore[arg-type]
    shutil.rmtree(data / "qdrant")
    (data / "keywords.sqlite").unlink()
    run = [SPARQLRAG, "reindex", "--data-dir", str(data), "--base-iri", "http://kb.example/"]
    done = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "reindexed collection 'default'" in done.stdout
    services = Services.open(settings, EmbeddedStore(settings.store_path))
    try:
        rebuilt = indexes(services)
    finally:
        services.close()
        services.store.close()
    for key in built:
        if key.endswith("vectors"):  # the same texts through the same model: the same vectors, to float noise
            assert np.abs(rebuilt[key] - built[key]).max() < 1e-5, (key, np.abs(rebuilt[key] - built[key]).max())  # type: ignore[operator]
        else:
            assert rebuilt[key] == built[key], key
