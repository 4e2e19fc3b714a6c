"""The ingest pipeline's lifecycle on real parts: pyoxigraph on disk, Qdrant local, FTS5, the offline
embedder and extractor."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyoxigraph import RdfFormat, Triple

from sparqlrag.extraction.decoders import DecodeError
from sparqlrag.extraction.knowledge import Knowledge
from sparqlrag.extraction.offline import OfflineExtractor
from sparqlrag.extraction.pipeline import Pipeline
from sparqlrag.extraction.plans import Source
from sparqlrag.library import librarian
from sparqlrag.library.collections import Collections
from sparqlrag.library.librarian import CollectionBusy, UnknownCollection
from sparqlrag.models.embedder import Embedder
from sparqlrag.store import EmbeddedStore
from sparqlrag.store.facts import parse_fact, walked_filter
from sparqlrag.store.keyword_index import KeywordIndex
from sparqlrag.store.select import select, select_terms
from sparqlrag.store.vector_index import VectorIndex
from sparqlrag.store.vocab import SPARQL_PREFIXES, Iris

BASE = "http://kb.example/"
PARAGRAPHS = [
    "Marie Curie was born in Warsaw. She studied physics in Paris.",
    "The Sorbonne is a university in Paris. Pierre Curie taught at the Sorbonne.",
    "Warsaw is the capital of Poland. The Vistula flows through Warsaw.",
]


class CountingExtractor(OfflineExtractor):
    """The offline extractor, remembering which chunk texts it was asked to read."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    async def extract(self, text: str, document_id: str = "") -> Knowledge:
        self.seen.append(text)
        return await super().extract(text, document_id)


@dataclass
class Kit:
    pipeline: Pipeline
    store: EmbeddedStore
    vectors: VectorIndex
    keywords: KeywordIndex
    extractor: CountingExtractor
    iris: Iris

    def ingest(self, document_id: str, text: str | bytes, **kwargs: object):  # type: ignore[no-untyped-def]
        data = text.encode() if isinstance(text, str) else text
        return asyncio.run(self.pipeline.ingest("default", document_id, data, **kwargs))  # type: ignore[arg-type]

    def snapshot(self) -> list[bytes]:
        out = io.BytesIO()
        self.store.dump(out, RdfFormat.N_QUADS)  # type: ignore[arg-type]
        return sorted(out.getvalue().splitlines())

    def facts(self) -> set[tuple[str, str, str]]:
        rows = select(
            self.store,
            SPARQL_PREFIXES
            + f"""SELECT ?s ?label ?o WHERE {{ GRAPH <{self.iris.knowledge_graph.value}> {{
            ?s ?p ?o . ?p rdfs:label ?label }} }}""",
        )
        name = self.iris.entity("").value
        return {(r["s"].removeprefix(name), r["label"], r["o"].removeprefix(name)) for r in rows}


@pytest.fixture
def kit(tmp_path: Path, embedder: Embedder) -> Iterator[Kit]:
    store = EmbeddedStore(tmp_path / "store")
    vectors = VectorIndex(embedder.dim, path=tmp_path / "qdrant")
    keywords = KeywordIndex(tmp_path / "keywords.sqlite")
    extractor = CountingExtractor()
    pipeline = Pipeline(
        store=store,
        vectors=vectors,
        keywords=keywords,
        embedder=embedder,
        extractor=extractor,
        base_iri=BASE,
        work_dir=tmp_path,
        chunk_size=120,
        chunk_overlap=0,
    )
    yield Kit(pipeline, store, vectors, keywords, extractor, Iris(BASE))
    vectors.close()
    keywords.close()
    store.close()


def test_ingest_writes_store_vectors_and_keywords(kit: Kit) -> None:
    result = kit.ingest("curie", "\n\n".join(PARAGRAPHS), filename="curie.txt")
    assert (result.status, result.chunks_added, result.chunks_removed) == ("ready", 3, 0) and result.facts > 3
    (info,) = librarian.documents(kit.store, kit.iris)
    assert (info.id, info.title, info.status, info.progress, info.chunks) == ("curie", "curie.txt", "ready", 1.0, 3)
    assert ("marie-curie", "was born in", "warsaw") in kit.facts()
    assert kit.vectors.count("default", "chunks") == 3 and kit.keywords.count("default") == 3
    assert kit.vectors.count("default", "entities") >= 6
    assert kit.keywords.search("default", "Vistula", 1)[0].iri.startswith(info.iri + "/chunk/")
    # the fact index: one point per walked fact, named by its reifier, its text as the walk reads it
    walked = [
        Triple(r["s"], r["p"], r["o"])
        for r in select_terms(
            kit.store,
            f"""SELECT ?s ?p ?o WHERE {{
        GRAPH <{kit.iris.knowledge_graph.value}> {{ ?s ?p ?o }} FILTER({walked_filter()}) }}""",
        )
    ]  # type: ignore[arg-type]
    assert walked and kit.vectors.count("default", "facts") == len(walked)
    born = Triple(kit.iris.entity("Marie Curie"), kit.iris.predicate("was born in"), kit.iris.entity("Warsaw"))
    (hit,) = [
        h
        for h in kit.vectors.search(
            "default", "facts", kit.pipeline.embedder.embed_one("Marie Curie was born in Warsaw"), 3
        )
        if h.iri == kit.iris.statement(born).value
    ]
    assert (
        hit.payload["text"] == "Marie Curie was born in Warsaw"
        and parse_fact(hit.payload["fact"]) == born
        and hit.score > 0.99
    )


def test_unchanged_content_is_a_no_op(kit: Kit) -> None:
    kit.ingest("curie", "\n\n".join(PARAGRAPHS))
    before, seen = kit.snapshot(), len(kit.extractor.seen)
    result = kit.ingest("curie", "\n\n".join(PARAGRAPHS))
    assert result.status == "unchanged" and result.chunks_kept == 3
    assert kit.snapshot() == before and len(kit.extractor.seen) == seen


def test_changed_content_extracts_only_changed_chunks(kit: Kit) -> None:
    kit.ingest("curie", "\n\n".join(PARAGRAPHS))
    kit.extractor.seen.clear()
    changed = PARAGRAPHS[:2] + ["Krakow is a city in Poland. The Vistula flows through Krakow."]
    result = kit.ingest("curie", "\n\n".join(changed))
    assert (result.chunks_added, result.chunks_removed, result.chunks_kept) == (1, 1, 2)
    assert kit.extractor.seen == [changed[2]]
    facts = kit.facts()
    assert ("warsaw", "is capital of", "poland") not in facts  # only the removed chunk said so
    assert ("marie-curie", "was born in", "warsaw") in facts  # a kept chunk says so
    assert kit.keywords.search("default", "capital", 5) == [] and kit.vectors.count("default", "chunks") == 3
    offsets = select(
        kit.store, SPARQL_PREFIXES + "SELECT ?text ?offset WHERE { GRAPH ?g { ?c sr:text ?text ; sr:offset ?offset } }"
    )
    full = "\n\n".join(changed)
    assert all(full[int(r["offset"]) :].startswith(r["text"]) for r in offsets)


def test_forgetting_keeps_facts_another_document_supports(kit: Kit) -> None:
    kit.ingest("a", "Marie Curie was born in Warsaw. The Vistula flows through Warsaw.")
    kit.ingest("b", "Marie Curie was born in Warsaw. She won the Nobel Prize.")
    vistula = kit.iris.entity("Vistula").value
    assert asyncio.run(kit.pipeline.forget("default", "a")) is True
    facts = kit.facts()
    assert ("marie-curie", "was born in", "warsaw") in facts
    assert not any(s == "vistula" or o == "vistula" for s, _, o in facts)
    derivations = select(
        kit.store,
        SPARQL_PREFIXES
        + f"""SELECT ?doc WHERE {{
        GRAPH <{kit.iris.source_graph.value}> {{ << ?s ?p ?o >> prov:wasDerivedFrom ?chunk . ?chunk
          prov:wasDerivedFrom ?doc }}
        GRAPH <{kit.iris.knowledge_graph.value}> {{ ?p rdfs:label "was born in" }} }}""",
    )
    assert [r["doc"] for r in derivations] == [kit.iris.document("b").value]
    entity_iris = {
        h.iri for h in kit.vectors.search("default", "entities", kit.pipeline.embedder.embed_one("Vistula"), 50)
    }
    assert vistula not in entity_iris and kit.iris.entity("Warsaw").value in entity_iris
    fact_points = {
        h.payload["text"] for h in kit.vectors.search("default", "facts", kit.pipeline.embedder.embed_one("Warsaw"), 50)
    }
    assert "Marie Curie was born in Warsaw" in fact_points and not any("Vistula" in text for text in fact_points)
    assert asyncio.run(kit.pipeline.forget("default", "b")) is True
    assert kit.facts() == set() and kit.snapshot() == []
    assert kit.vectors.count("default", "chunks") == 0 and kit.vectors.count("default", "entities") == 0
    assert kit.vectors.count("default", "facts") == 0 and kit.keywords.count("default") == 0
    assert asyncio.run(kit.pipeline.forget("default", "b")) is False


@pytest.mark.parametrize(
    "data,media_type,message",
    [
        (b"", None, "empty"),
        (b"\x00\x01\x02binary\x00" * 50, "text/plain", "binary"),
        (b"not a pdf at all", "application/pdf", "not a PDF"),
    ],
)
def test_bad_documents_change_nothing(kit: Kit, data: bytes, media_type: str | None, message: str) -> None:
    kit.ingest("keep", "Marie Curie was born in Warsaw.")
    before = kit.snapshot()
    with pytest.raises(DecodeError, match=message):
        kit.ingest("bad", data, media_type=media_type)
    assert kit.snapshot() == before and kit.vectors.count("default", "chunks") == 1
    assert (
        not list((kit.pipeline.library.pending_dir).glob("*.json"))
        if kit.pipeline.library.pending_dir.exists()
        else True
    )


def test_progress_is_visible_while_a_document_is_processed(kit: Kit) -> None:
    seen: list[tuple[str, float]] = []
    read = kit.extractor.extract

    async def watching(text: str, document_id: str = "") -> Knowledge:
        rows = librarian.documents(kit.store, kit.iris, kit.iris.document("long"))
        seen.append((rows[0].status, rows[0].progress))
        return await read(text, document_id)

    kit.extractor.extract = watching  # type: ignore[method-assign]
    text = "\n\n".join(f"Person{i} Smith was born in City{i}. City{i} is in Country{i % 3}." for i in range(30))
    result = kit.ingest("long", text)
    assert result.chunks_added > 10
    statuses, shares = {status for status, _ in seen}, [share for _, share in seen]
    assert statuses == {"processing"} and shares == sorted(shares)  # never goes backwards
    assert shares[0] == 0.0 and 0.3 < shares[-1] < 0.9  # seen part-way, before the final commit
    (info,) = librarian.documents(kit.store, kit.iris, kit.iris.document("long"))
    assert (info.status, info.progress) == ("ready", 1.0)


def test_reingest_extracts_every_chunk_again_with_the_current_extractor(kit: Kit) -> None:
    kit.ingest("curie", "\n\n".join(PARAGRAPHS), filename="curie.txt")
    before = kit.facts()

    class Renaming(CountingExtractor):  # a "new model", which knows Warsaw as Varsovia
        async def extract(self, text: str, document_id: str = "") -> Knowledge:
            return await super().extract(text.replace("Warsaw", "Varsovia"), document_id)

    kit.pipeline.extractor = Renaming()
    source = asyncio.run(kit.pipeline.kept_source("default", "curie"))
    assert (source.filename, source.data) == ("curie.txt", "\n\n".join(PARAGRAPHS).encode())
    (result,) = asyncio.run(kit.pipeline.ingest_many("default", [source], force=True))
    assert (result.status, result.chunks_added, result.chunks_removed, result.chunks_kept) == ("ready", 3, 3, 0)
    assert len(kit.pipeline.extractor.seen) == 3  # type: ignore[attr-defined]
    after = kit.facts()
    assert ("marie-curie", "was born in", "warsaw") in before and ("marie-curie", "was born in", "warsaw") not in after
    assert ("marie-curie", "was born in", "varsovia") in after and not any("warsaw" in (s, o) for s, _, o in after)
    assert len(after) == len(before)
    assert (
        kit.vectors.count("default", "chunks") == 3 and kit.keywords.count("default") == 3
    )  # rows rewritten, not lost
    (info,) = librarian.documents(kit.store, kit.iris)
    assert (info.status, info.chunks, info.title) == ("ready", 3, "curie.txt")
    with pytest.raises(LookupError, match="no copy of document 'nope'"):
        asyncio.run(kit.pipeline.kept_source("default", "nope"))


def test_forgetting_a_document_drops_its_library_copy(kit: Kit) -> None:
    kit.ingest("gone", "Marie Curie was born in Warsaw.")
    assert asyncio.run(kit.pipeline.kept_source("default", "gone")).data
    assert asyncio.run(kit.pipeline.forget("default", "gone"))
    with pytest.raises(LookupError):
        asyncio.run(kit.pipeline.kept_source("default", "gone"))


def test_submit_queues_then_ingests_in_the_background(kit: Kit) -> None:
    async def run() -> tuple[list, list, list]:
        accepted = await kit.pipeline.submit(
            "default",
            [Source("a", b"Marie Curie was born in Warsaw."), Source("b", b"Warsaw is the capital of Poland.")],
        )
        queued = [(i.id, i.status) for i in librarian.documents(kit.store, kit.iris)]
        await kit.pipeline.wait_background()
        again = await kit.pipeline.submit("default", [Source("a", b"Marie Curie was born in Warsaw.")])
        return accepted, queued, again

    accepted, queued, again = asyncio.run(run())
    assert [r.status for r in accepted] == ["queued", "queued"] and sorted(queued) == [("a", "queued"), ("b", "queued")]
    assert [(i.id, i.status) for i in librarian.documents(kit.store, kit.iris)] == [("a", "ready"), ("b", "ready")]
    assert [r.status for r in again] == ["unchanged"]
    assert ("marie-curie", "was born in", "warsaw") in kit.facts()
    assert not list(kit.pipeline.library.pending_dir.glob("*.json"))


def test_submit_refuses_a_bad_document_before_writing_anything(kit: Kit) -> None:
    kit.ingest("keep", "Marie Curie was born in Warsaw.")
    before = kit.snapshot()
    with pytest.raises(DecodeError, match="empty"):
        asyncio.run(kit.pipeline.submit("default", [Source("fine", b"Some text."), Source("bad", b"")]))
    assert kit.snapshot() == before and not list(kit.pipeline.library.pending_dir.glob("*.json"))


def test_locks_are_dropped_when_done(kit: Kit) -> None:
    for index in range(5):
        kit.ingest(f"doc-{index}", f"Person{index} was born in Warsaw.")
    asyncio.run(kit.pipeline.forget("default", "doc-0"))
    assert kit.pipeline.locks._locks == {} and not kit.pipeline.locks.active


def test_collections_isolate_and_delete_with_full_cascade(kit: Kit) -> None:
    pipeline = kit.pipeline
    collections = Collections(
        store=pipeline.store,
        base_iri=BASE,
        locks=pipeline.locks,
        vectors=pipeline.vectors,
        keywords=pipeline.keywords,
        library=pipeline.library,
    )
    other = Iris(BASE, "other")
    before = kit.snapshot()
    with pytest.raises(UnknownCollection, match="no collection 'other'"):
        asyncio.run(kit.pipeline.ingest("other", "x", b"Marie Curie was born in Warsaw."))
    assert kit.snapshot() == before and asyncio.run(collections.get("other")) is None
    assert asyncio.run(collections.create("other")) is True and asyncio.run(collections.create("other")) is False
    kit.ingest("same-id", "Marie Curie was born in Warsaw.")
    asyncio.run(kit.pipeline.ingest("other", "same-id", b"The Vistula flows through Krakow."))
    infos = {info.name: info for info in asyncio.run(collections.list())}
    assert sorted(infos) == ["default", "other"]
    assert (infos["other"].documents, infos["other"].chunks) == (1, 1) and infos["other"].facts > 0
    assert infos["other"].created is not None and infos["default"].documents == 1
    # nothing of one collection shows in the other
    assert [h.iri.startswith(other.document("").value) for h in kit.keywords.search("other", "Vistula Warsaw", 5)] == [
        True
    ]
    assert kit.keywords.search("default", "Vistula", 5) == []
    assert ("marie-curie", "was born in", "warsaw") in kit.facts()
    assert not any("krakow" in o for _, _, o in kit.facts())

    # a collection is not deleted under a running ingest
    async def delete_while_busy() -> None:
        async with kit.pipeline.locks.documents("other", ["x"]):
            await collections.delete("other")

    with pytest.raises(CollectionBusy):
        asyncio.run(delete_while_busy())
    assert asyncio.run(collections.delete("other")) is True
    assert asyncio.run(collections.delete("other")) is False and asyncio.run(collections.exists("other")) is False
    assert kit.vectors.count("other", "chunks") == 0 and kit.vectors.count("other", "entities") == 0
    assert kit.keywords.count("other") == 0 and not (kit.pipeline.library.library_dir / "other").exists()
    graphs = {r["g"] for r in select(kit.store, "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")}
    assert not {g for g in graphs if "/other" in g}
    assert kit.vectors.count("default", "chunks") == 1 and librarian.documents(kit.store, kit.iris)[0].id == "same-id"
