"""The running parts built from Settings: store, indexes, models, pipeline, Document RAG.

The one place they are built (`Services.open`): every part is handed the parts it uses, so
none builds another, and tests build through the same function with their own extractor or
models. The CLI opens them on the data directory; the server does the same with its store in
a WorkerStore. Models load once here and are shared.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sparqlrag.config import Settings
from sparqlrag.extraction.curation import Curation
from sparqlrag.extraction.decode_limits import DecodeLimits
from sparqlrag.extraction.decode_pool import DecodePool
from sparqlrag.extraction.extractions import Extractions
from sparqlrag.extraction.guided import CollectionExtractors
from sparqlrag.extraction.indexing import Indexer
from sparqlrag.extraction.knowledge import Extractor
from sparqlrag.extraction.llm_extractor import LLMExtractor
from sparqlrag.extraction.offline import OfflineExtractor
from sparqlrag.extraction.pipeline import Pipeline
from sparqlrag.extraction.recovery import Recovery
from sparqlrag.library.collections import Collections
from sparqlrag.library.cores import Cores
from sparqlrag.library.files import Library
from sparqlrag.library.locks import Locks
from sparqlrag.models.embedder import Embedder
from sparqlrag.models.llm import AnthropicModel, ChatModel, OpenAICompatibleModel, ResponseCache
from sparqlrag.models.reranker import Reranker, build_reranker
from sparqlrag.ontology.registry import Ontologies
from sparqlrag.ontology.selection import ElementIndexes, OntologyGuides, Selector
from sparqlrag.queries.nl_query import NlQuery
from sparqlrag.retrieval.document_rag import DocumentRag
from sparqlrag.retrieval.graph_rag import GraphRag
from sparqlrag.retrieval.trace import Retention, TraceLog
from sparqlrag.store.base import QuadStore
from sparqlrag.store.fact_index import FactIndex
from sparqlrag.store.graph_index import GraphIndex
from sparqlrag.store.keyword_index import KeywordIndex
from sparqlrag.store.local_vectors import LocalVectors
from sparqlrag.store.qdrant_vectors import QdrantVectors
from sparqlrag.store.remote import RemoteStore
from sparqlrag.store.vector_index import VectorIndex
from sparqlrag.threads import off_loop

log = logging.getLogger(__name__)


def build_llm(settings: Settings) -> ChatModel | None:
    if settings.llm == "none":
        return None
    common: dict[str, Any] = {
        "max_concurrency": settings.llm_concurrency,
        "cache": ResponseCache(settings.data_dir / "llm-cache.sqlite"),
    }
    if settings.llm == "anthropic":
        key = settings.llm_api_key or os.environ.get("ANTHROPIC_API_KEY")
        return AnthropicModel(settings.llm_model, api_key=key, base_url=settings.llm_base_url, **common)
    if not settings.llm_base_url:  # llm == "openai"
        raise ValueError('llm = "openai" needs llm_base_url (for example http://127.0.0.1:11434/v1 for Ollama)')
    return OpenAICompatibleModel(
        settings.llm_model, base_url=settings.llm_base_url, api_key=settings.llm_api_key, **common
    )


def remote_store(settings: Settings) -> RemoteStore:
    """The store at `settings.store_url` (which must be set): the system of record is there."""
    assert settings.store_url is not None
    return RemoteStore(
        settings.store_url,
        update_url=settings.store_update_url,
        gsp_url=settings.store_gsp_url,
        username=settings.store_username,
        password=settings.store_password,
        token=settings.store_token,
        timeout=settings.store_timeout,
        max_response_bytes=settings.store_max_response_bytes,
        union_parameter=settings.store_union_parameter,
        default_graph=settings.store_default_graph,
        triple_terms=settings.store_triple_terms,
    )


def vector_index(settings: Settings, dim: int) -> VectorIndex:
    """The Qdrant server at `qdrant_url`, else the data directory's own file; a data directory
    from before that file has its points moved in from the old local Qdrant folder, once."""
    if settings.qdrant_url:
        return QdrantVectors(dim, url=settings.qdrant_url)
    local = LocalVectors(dim, settings.data_dir / "vectors.sqlite")
    if (old := settings.data_dir / "qdrant").is_dir():
        log.warning("moving the vector indexes out of %s (once) ...", old)
        log.warning("moved %d vectors; %s.migrated may be deleted", local.adopt_qdrant_folder(old), old)
    return local


@dataclass
class Models:
    """The models, loaded once (seconds): the CLI loads them before serving, so a model
    configuration error is one line instead of a failed server start."""

    embedder: Embedder
    reranker: Reranker
    llm: ChatModel | None

    @classmethod
    def load(cls, settings: Settings) -> Models:
        """Raises ValueError, LLMError or ModelUnavailable for a configuration the user can fix."""
        embedder = Embedder(settings.embedding_model, models_dir=settings.models_dir, offline=settings.offline)
        reranker = build_reranker(
            settings.reranker_model, models_dir=settings.models_dir, embedder=embedder, offline=settings.offline
        )
        llm = build_llm(settings)
        if settings.extractor == "llm" and llm is None:
            raise ValueError('extractor = "llm" needs an LLM: set llm to "anthropic" or "openai"')
        return cls(embedder, reranker, llm)


@dataclass
class Services:
    settings: Settings
    store: QuadStore
    embedder: Embedder
    vectors: VectorIndex
    keywords: KeywordIndex
    llm: ChatModel | None
    library: Library
    locks: Locks
    indexer: Indexer
    pipeline: Pipeline
    recovery: Recovery
    collections: Collections
    cores: Cores
    document_rag: DocumentRag
    graph_rag: GraphRag
    ontologies: Ontologies
    nl_query: NlQuery
    curation: Curation

    @classmethod
    def open(
        cls, settings: Settings, store: QuadStore, extractor: Extractor | None = None, models: Models | None = None
    ) -> Services:
        """Everything on `store`; `extractor` replaces the configured one (e.g. pre-extracted triples)."""
        models = models or Models.load(settings)
        embedder, llm = models.embedder, models.llm
        vectors = vector_index(settings, embedder.dim)
        keywords = KeywordIndex(settings.data_dir / "keywords.sqlite")
        graph_index = GraphIndex(store, vectors, settings.data_dir / "graph.sqlite")
        ontologies = Ontologies(store, settings.base_iri)
        selector = Selector(embedder, settings.ontology_threshold, settings.ontology_top_k)
        extracting_llm = llm if settings.extractor == "llm" else None
        indexes = ElementIndexes(ontologies, embedder)
        by_ontology = CollectionExtractors(
            store, OntologyGuides(indexes, selector), extracting_llm, settings.prompts_dir
        )
        overridden = extractor is not None
        if extractor is None:
            extractor = LLMExtractor(extracting_llm, settings.prompts_dir) if extracting_llm else OfflineExtractor()
        library, locks = Library(settings.data_dir), Locks()
        extractions = Extractions(library.library_dir)
        facts = FactIndex(store, vectors, embedder.embed)
        indexer = Indexer(
            store=store,
            vectors=vectors,
            keywords=keywords,
            graph=graph_index,
            facts=facts,
            embedder=embedder,
            extractions=extractions,
        )
        pipeline = Pipeline(
            store=store,
            indexer=indexer,
            library=library,
            extractions=extractions,
            locks=locks,
            embedder=embedder,
            extractor=extractor,
            chunk_size=settings.chunk_size,
            chunk_overlap=settings.chunk_overlap,
            concurrency=settings.ingest_concurrency,
            extractor_for=by_ontology if not overridden else None,
            resolution=settings.entity_resolution,
            decoder=decode_pool(settings),
        )
        max_age = timedelta(days=settings.trace_max_age_days) if settings.trace_max_age_days else None
        traces = TraceLog(store, Retention(settings.trace_keep, max_age))
        rag = DocumentRag(
            store=store,
            vectors=vectors,
            keywords=keywords,
            embedder=embedder,
            traces=traces,
            reranker=models.reranker,
            llm=llm,
            prompts_dir=settings.prompts_dir,
            weights=settings.hybrid_weights,
        )
        graph = GraphRag(
            store=store,
            vectors=vectors,
            facts=facts,
            graph=graph_index,
            documents=rag,
            embedder=embedder,
            reranker=models.reranker,
            traces=traces,
            llm=llm,
            prompts_dir=settings.prompts_dir,
            phrases=OfflineExtractor().phrases,
        )
        nl_query = NlQuery(
            llm=llm,
            ontologies=ontologies,
            indexes=indexes,
            selector=selector,
            base_iri=settings.base_iri,
            prompts_dir=settings.prompts_dir,
        )
        collections = Collections(
            store=store,
            base_iri=settings.base_iri,
            locks=locks,
            vectors=vectors,
            keywords=keywords,
            graph=graph_index,
            library=library,
        )
        cores = Cores(collections, ontologies, settings.embedding_model)
        return cls(
            settings=settings,
            store=store,
            embedder=embedder,
            vectors=vectors,
            keywords=keywords,
            llm=llm,
            library=library,
            locks=locks,
            indexer=indexer,
            pipeline=pipeline,
            recovery=Recovery(pipeline, library, indexer, collections),
            collections=collections,
            cores=cores,
            document_rag=rag,
            graph_rag=graph,
            ontologies=ontologies,
            nl_query=nl_query,
            curation=Curation(pipeline),
        )

    async def repair(self) -> None:
        """Put right what a killed process left, before anything else writes: collection deletes
        it left part-way are finished, core imports it left half written undone, index rows of its
        unfinished ingests and forgets swept, graph indexes an older version did not keep built.
        (Its unfinished ingests then resume with recovery.recover().) Registrations an older
        version kept elsewhere move into the registry graph first."""
        await off_loop(self.collections.move_registrations)
        await off_loop(self.ontologies.move_registry)
        await self.collections.finish_drops()
        await self.cores.undo_interrupted()
        await self.recovery.sweep_crashed()
        held = [self.collections.iris(info.name) for info in await self.collections.list()]
        for name in await self.indexer.build_missing_graphs(held):
            log.warning("built the graph index of collection %r, which an older version did not keep", name)
        for name, chunks in (await self.indexer.unindexed(held)).items():
            log.warning(
                "collection %r holds %d chunks that this data directory has not indexed (another one did, on the "
                "same store?): no answer finds them until `sparqlrag reindex --collection %s` is run here",
                name,
                chunks,
                name,
            )

    def close(self) -> None:
        self.pipeline.decoder.close()
        self.vectors.close()
        self.keywords.close()
        self.indexer.graph.close()


def decode_pool(settings: Settings) -> DecodePool:
    """The processes that decode documents, within the settings' decode_* limits."""
    limits = DecodeLimits(
        settings.decode_timeout,
        settings.decode_memory_bytes,
        settings.decode_max_unpacked_bytes,
        settings.decode_max_blocks,
    )
    return DecodePool(limits, settings.decode_workers)
