"""Services on a real store on disk holding a few small documents, each ingested whole by the
offline pipeline (titled by its id): the corpus Graph RAG's tests ask questions of."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sparqlrag.config import Settings
from sparqlrag.services import Services
from sparqlrag.store import EmbeddedStore


@contextmanager
def ingested(root: Path, base_iri: str, documents: dict[str, str]) -> Iterator[Services]:
    store = EmbeddedStore(root / "store")
    services = Services.open(Settings(data_dir=root, base_iri=base_iri, reranker_model=None), store)
    try:
        for document_id, text in documents.items():
            asyncio.run(
                services.pipeline.ingest(
                    services.collections.iris("default"), document_id, text.encode(), title=document_id
                )
            )
        yield services
    finally:
        services.close()
        store.close()
