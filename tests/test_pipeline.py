"""The ingest pipeline's lifecycle on real parts: pyoxigraph on disk, local vectors, FTS5, the offline
embedder and extractor."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyoxigraph import RdfFormat, Triple

from sparqlrag.config import Settings
from sparqlrag.extraction.decoders import Decoded, DecodeError
from sparqlrag.extraction.knowledge import Knowledge
from sparqlrag.extraction.offline import OfflineExtractor
from sparqlrag.extraction.pipeline import Pipeline
from sparqlrag.extraction.plans import IngestResult, Source
from sparqlrag.extraction.updates import NOT_FACTS
from sparqlrag.library import librarian
from sparqlrag.library.librarian import CollectionBusy, UnknownCollection
from sparqlrag.models.embedder import Embedder
from sparqlrag.models.reranker import CosineReranker
from sparqlrag.services import Models, Services
from sparqlrag.store import EmbeddedStore
from sparqlrag.store.base import StoreUnavailable
from sparqlrag.store.facts import parse_fact, walked_filter
from sparqlrag.store.keyword_index import KeywordIndex
from sparqlrag.store.select import select, select_terms
from sparqlrag.store.vector_index import KINDS, VectorIndex
from sparqlrag.store.vocab import SPARQL_PREFIXES, Iris

BASE = "http://kb.example/"
DEFAULT = Iris(BASE)  # the default collection's IRIs
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
class PipelineParts:
    services: Services
    """A pipeline on real parts, and the parts, for the tests to look into."""

    pipeline: Pipeline
    store: EmbeddedStore
    vectors: VectorIndex
    keywords: KeywordIndex
    extractor: CountingExtractor
    iris: Iris

    def ingest(self, document_id: str, text: str | bytes, **kwargs: object):
        data = text.encode() if isinstance(text, str) else text
        return asyncio.run(self.pipeline.ingest(DEFAULT, document_id, data, **kwargs))  # type: ignore[arg-type]

    def snapshot(self) -> list[bytes]:
        out = io.BytesIO()
        self.store.dump(out, RdfFormat.N_QUADS)
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
def parts(tmp_path: Path, embedder: Embedder) -> Iterator[PipelineParts]:
    """The pipeline as the server has it (Services.open), with a counting extractor and small chunks."""
    store = EmbeddedStore(tmp_path / "store")
    extractor = CountingExtractor()
    settings = Settings(data_dir=tmp_path, base_iri=BASE, chunk_size=120, chunk_overlap=0, reranker_model=None)
    services = Services.open(settings, store, extractor, Models(embedder, CosineReranker(embedder), None))
    yield PipelineParts(services, services.pipeline, store, services.vectors, services.keywords, extractor, Iris(BASE))
    services.close()
    store.close()


def test_ingest_writes_store_vectors_and_keywords(parts: PipelineParts) -> None:
    result = parts.ingest("curie", "\n\n".join(PARAGRAPHS), filename="curie.txt")
    assert (result.status, result.chunks_added, result.chunks_removed) == ("ready", 3, 0) and result.facts > 3
    (info,) = librarian.documents(parts.store, parts.iris)
    assert (info.id, info.title, info.status, info.progress, info.chunks) == ("curie", "curie.txt", "ready", 1.0, 3)
    # the ingest reports the count `documents` lists: the facts its chunks support, names and definitions aside
    names = ", ".join(f"<{p.value}>" for p in NOT_FACTS)
    reified = select(
        parts.store,
        SPARQL_PREFIXES
        + f"""SELECT (COUNT(DISTINCT ?st) AS ?n) (SUM(IF(?p IN ({names}), 1, 0)) AS ?names) WHERE {{
        GRAPH <{parts.iris.source_graph.value}> {{ ?st rdf:reifies <<( ?s ?p ?o )>> }} }}""",
    )[0]
    assert int(reified["names"]) > 0 and result.facts == info.facts == int(reified["n"]) - int(reified["names"])
    assert ("marie-curie", "was born in", "warsaw") in parts.facts()
    assert parts.vectors.count("default", "chunks") == 3 and parts.keywords.count("default") == 3
    assert parts.vectors.count("default", "entities") >= 6
    assert parts.keywords.search("default", "Vistula", 1)[0].iri.startswith(info.iri + "/chunk/")
    # the fact index: one point per walked fact, named by its reifier, its text as the walk reads it
    walked = [
        Triple(r["s"], r["p"], r["o"])  # type: ignore[arg-type]  # the filter keeps IRI subjects and predicates
        for r in select_terms(
            parts.store,
            f"""SELECT ?s ?p ?o WHERE {{
        GRAPH <{parts.iris.knowledge_graph.value}> {{ ?s ?p ?o }} FILTER({walked_filter()}) }}""",
        )
    ]
    assert walked and parts.vectors.count("default", "facts") == len(walked)
    born = Triple(parts.iris.entity("Marie Curie"), parts.iris.predicate("was born in"), parts.iris.entity("Warsaw"))
    (hit,) = [
        h
        for h in parts.vectors.search(
            "default", "facts", parts.pipeline.embedder.embed_one("Marie Curie was born in Warsaw"), 3
        )
        if h.iri == parts.iris.statement(born).value
    ]
    assert (
        hit.payload["text"] == "Marie Curie was born in Warsaw"
        and parse_fact(hit.payload["fact"]) == born
        and hit.score > 0.99
    )


def test_unchanged_content_is_a_no_op(parts: PipelineParts) -> None:
    parts.ingest("curie", "\n\n".join(PARAGRAPHS))
    before, seen = parts.snapshot(), len(parts.extractor.seen)
    result = parts.ingest("curie", "\n\n".join(PARAGRAPHS))
    assert result.status == "unchanged" and result.chunks_kept == 3
    assert parts.snapshot() == before and len(parts.extractor.seen) == seen


def test_changed_content_extracts_only_changed_chunks(parts: PipelineParts) -> None:
    parts.ingest("curie", "\n\n".join(PARAGRAPHS))
    parts.extractor.seen.clear()
    changed = PARAGRAPHS[:2] + ["Krakow is a city in Poland. The Vistula flows through Krakow."]
    result = parts.ingest("curie", "\n\n".join(changed))
    assert (result.chunks_added, result.chunks_removed, result.chunks_kept) == (1, 1, 2)
    assert parts.extractor.seen == [changed[2]]
    facts = parts.facts()
    assert ("warsaw", "is capital of", "poland") not in facts  # only the removed chunk said so
    assert ("marie-curie", "was born in", "warsaw") in facts  # a kept chunk says so
    assert parts.keywords.search("default", "capital", 5) == [] and parts.vectors.count("default", "chunks") == 3
    offsets = select(
        parts.store,
        SPARQL_PREFIXES + "SELECT ?text ?offset WHERE { GRAPH ?g { ?c sr:text ?text ; sr:offset ?offset } }",
    )
    full = "\n\n".join(changed)
    assert all(full[int(r["offset"]) :].startswith(r["text"]) for r in offsets)


def test_forgetting_keeps_facts_another_document_supports(parts: PipelineParts) -> None:
    parts.ingest("a", "Marie Curie was born in Warsaw. The Vistula flows through Warsaw.")
    parts.ingest("b", "Marie Curie was born in Warsaw. She won the Nobel Prize.")
    vistula = parts.iris.entity("Vistula").value
    assert asyncio.run(parts.pipeline.forget(DEFAULT, "a")) is True
    facts = parts.facts()
    assert ("marie-curie", "was born in", "warsaw") in facts
    assert not any(s == "vistula" or o == "vistula" for s, _, o in facts)
    derivations = select(
        parts.store,
        SPARQL_PREFIXES
        + f"""SELECT ?doc WHERE {{
        GRAPH <{parts.iris.source_graph.value}> {{ << ?s ?p ?o >> prov:wasDerivedFrom ?chunk . ?chunk
          prov:wasDerivedFrom ?doc }}
        GRAPH <{parts.iris.knowledge_graph.value}> {{ ?p rdfs:label "was born in" }} }}""",
    )
    assert [r["doc"] for r in derivations] == [parts.iris.document("b").value]
    entity_iris = {
        h.iri for h in parts.vectors.search("default", "entities", parts.pipeline.embedder.embed_one("Vistula"), 50)
    }
    assert vistula not in entity_iris and parts.iris.entity("Warsaw").value in entity_iris
    warsaw = parts.pipeline.embedder.embed_one("Warsaw")
    fact_points = {h.payload["text"] for h in parts.vectors.search("default", "facts", warsaw, 50)}
    assert "Marie Curie was born in Warsaw" in fact_points and not any("Vistula" in text for text in fact_points)
    assert asyncio.run(parts.pipeline.forget(DEFAULT, "b")) is True
    assert parts.facts() == set() and parts.snapshot() == []
    assert parts.vectors.count("default", "chunks") == 0 and parts.vectors.count("default", "entities") == 0
    assert parts.vectors.count("default", "facts") == 0 and parts.keywords.count("default") == 0
    assert asyncio.run(parts.pipeline.forget(DEFAULT, "b")) is False


@pytest.mark.parametrize(
    "data,media_type,message",
    [
        (b"", None, "empty"),
        (b"\x00\x01\x02binary\x00" * 50, "text/plain", "binary"),
        (b"not a pdf at all", "application/pdf", "not a PDF"),
    ],
)
def test_bad_documents_change_nothing(parts: PipelineParts, data: bytes, media_type: str | None, message: str) -> None:
    parts.ingest("keep", "Marie Curie was born in Warsaw.")
    before = parts.snapshot()
    with pytest.raises(DecodeError, match=message):
        parts.ingest("bad", data, media_type=media_type)
    assert parts.snapshot() == before and parts.vectors.count("default", "chunks") == 1
    assert (
        not list((parts.services.library.pending_dir).glob("*.json"))
        if parts.services.library.pending_dir.exists()
        else True
    )


def test_progress_is_visible_while_a_document_is_processed(parts: PipelineParts) -> None:
    seen: list[tuple[str, float]] = []
    read = parts.extractor.extract

    async def watching(text: str, document_id: str = "") -> Knowledge:
        rows = librarian.documents(parts.store, parts.iris, parts.iris.document("long"))
        seen.append((rows[0].status, rows[0].progress))
        return await read(text, document_id)

    parts.extractor.extract = watching  # type: ignore[method-assign]
    text = "\n\n".join(f"Person{i} Smith was born in City{i}. City{i} is in Country{i % 3}." for i in range(30))
    result = parts.ingest("long", text)
    assert result.chunks_added > 10
    statuses, shares = {status for status, _ in seen}, [share for _, share in seen]
    assert statuses == {"processing"} and shares == sorted(shares)  # never goes backwards
    assert shares[0] == 0.0 and 0.3 < shares[-1] < 0.9  # seen part-way, before the final commit
    (info,) = librarian.documents(parts.store, parts.iris, parts.iris.document("long"))
    assert (info.status, info.progress) == ("ready", 1.0)


def test_reingest_extracts_every_chunk_again_with_the_current_extractor(parts: PipelineParts) -> None:
    parts.ingest("curie", "\n\n".join(PARAGRAPHS), filename="curie.txt")
    before = parts.facts()

    class Renaming(CountingExtractor):  # a "new model", which knows Warsaw as Varsovia
        async def extract(self, text: str, document_id: str = "") -> Knowledge:
            return await super().extract(text.replace("Warsaw", "Varsovia"), document_id)

    parts.pipeline.extractor = Renaming()
    source = asyncio.run(parts.pipeline.kept_source(DEFAULT, "curie"))
    assert (source.filename, source.data) == ("curie.txt", "\n\n".join(PARAGRAPHS).encode())
    (result,) = asyncio.run(parts.pipeline.ingest_many(DEFAULT, [source], force=True))
    assert isinstance(result, IngestResult)
    assert (result.status, result.chunks_added, result.chunks_removed, result.chunks_kept) == ("ready", 3, 3, 0)
    assert len(parts.pipeline.extractor.seen) == 3
    after = parts.facts()
    assert ("marie-curie", "was born in", "warsaw") in before and ("marie-curie", "was born in", "warsaw") not in after
    assert ("marie-curie", "was born in", "varsovia") in after and not any("warsaw" in (s, o) for s, _, o in after)
    assert len(after) == len(before)
    assert (
        parts.vectors.count("default", "chunks") == 3 and parts.keywords.count("default") == 3
    )  # rows rewritten, not lost
    (info,) = librarian.documents(parts.store, parts.iris)
    assert (info.status, info.chunks, info.title) == ("ready", 3, "curie.txt")
    with pytest.raises(LookupError, match="no copy of document 'nope'"):
        asyncio.run(parts.pipeline.kept_source(DEFAULT, "nope"))


def test_forgetting_a_document_drops_its_library_copy(parts: PipelineParts) -> None:
    parts.ingest("gone", "Marie Curie was born in Warsaw.")
    assert asyncio.run(parts.pipeline.kept_source(DEFAULT, "gone")).data
    assert asyncio.run(parts.pipeline.forget(DEFAULT, "gone"))
    with pytest.raises(LookupError):
        asyncio.run(parts.pipeline.kept_source(DEFAULT, "gone"))


def test_submit_queues_then_ingests_in_the_background(parts: PipelineParts) -> None:
    async def run() -> tuple[list, list, list]:
        accepted = await parts.pipeline.submit(
            DEFAULT,
            [Source("a", b"Marie Curie was born in Warsaw."), Source("b", b"Warsaw is the capital of Poland.")],
        )
        queued = [(i.id, i.status) for i in librarian.documents(parts.store, parts.iris)]
        await parts.pipeline.wait_background()
        again = await parts.pipeline.submit(DEFAULT, [Source("a", b"Marie Curie was born in Warsaw.")])
        return accepted, queued, again

    accepted, queued, again = asyncio.run(run())
    assert [r.status for r in accepted] == ["queued", "queued"] and sorted(queued) == [("a", "queued"), ("b", "queued")]
    assert [(i.id, i.status) for i in librarian.documents(parts.store, parts.iris)] == [("a", "ready"), ("b", "ready")]
    assert [r.status for r in again] == ["unchanged"]
    assert ("marie-curie", "was born in", "warsaw") in parts.facts()
    assert not list(parts.services.library.pending_dir.glob("*.json"))


def test_submit_refuses_a_bad_document_before_writing_anything(parts: PipelineParts) -> None:
    parts.ingest("keep", "Marie Curie was born in Warsaw.")
    before = parts.snapshot()
    with pytest.raises(DecodeError, match="empty"):
        asyncio.run(parts.pipeline.submit(DEFAULT, [Source("fine", b"Some text."), Source("bad", b"")]))
    assert parts.snapshot() == before and not list(parts.services.library.pending_dir.glob("*.json"))


def test_locks_are_dropped_when_done(parts: PipelineParts) -> None:
    for index in range(5):
        parts.ingest(f"doc-{index}", f"Person{index} was born in Warsaw.")
    asyncio.run(parts.pipeline.forget(DEFAULT, "doc-0"))
    assert parts.services.locks._locks == {} and not parts.services.locks.active


def test_collections_isolate_and_delete_with_full_cascade(parts: PipelineParts) -> None:
    collections = parts.services.collections
    other = Iris(BASE, "other")
    before = parts.snapshot()
    with pytest.raises(UnknownCollection, match="no collection 'other'"):
        asyncio.run(parts.pipeline.ingest(Iris(BASE, "other"), "x", b"Marie Curie was born in Warsaw."))
    assert parts.snapshot() == before and asyncio.run(collections.get("other")) is None
    assert asyncio.run(collections.create("other")) is True and asyncio.run(collections.create("other")) is False
    parts.ingest("same-id", "Marie Curie was born in Warsaw.")
    asyncio.run(parts.pipeline.ingest(Iris(BASE, "other"), "same-id", b"The Vistula flows through Krakow."))
    infos = {info.name: info for info in asyncio.run(collections.list())}
    assert sorted(infos) == ["default", "other"]
    assert (infos["other"].documents, infos["other"].chunks) == (1, 1) and infos["other"].facts > 0
    assert infos["other"].created is not None and infos["default"].documents == 1
    # nothing of one collection shows in the other
    found = parts.keywords.search("other", "Vistula Warsaw", 5)
    assert [h.iri.startswith(other.document("").value) for h in found] == [True]
    assert parts.keywords.search("default", "Vistula", 5) == []
    assert ("marie-curie", "was born in", "warsaw") in parts.facts()
    assert not any("krakow" in o for _, _, o in parts.facts())

    # a collection is not deleted under a running ingest
    async def delete_while_busy() -> None:
        async with parts.services.locks.documents("other", ["x"]):
            await collections.delete("other")

    with pytest.raises(CollectionBusy):
        asyncio.run(delete_while_busy())
    assert asyncio.run(collections.delete("other")) is True
    assert asyncio.run(collections.delete("other")) is False and asyncio.run(collections.exists("other")) is False
    assert parts.vectors.count("other", "chunks") == 0 and parts.vectors.count("other", "entities") == 0
    assert parts.keywords.count("other") == 0 and not (parts.services.library.library_dir / "other").exists()
    graphs = {r["g"] for r in select(parts.store, "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")}
    assert not {g for g in graphs if "/other" in g}
    assert parts.vectors.count("default", "chunks") == 1
    assert librarian.documents(parts.store, parts.iris)[0].id == "same-id"


def test_a_failed_commit_takes_back_its_index_rows_and_keeps_the_version_before(
    parts: PipelineParts, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts.ingest("curie", "\n\n".join(PARAGRAPHS[:2]))
    before = {kind: parts.vectors.iris("default", kind) for kind in KINDS}
    keywords, facts, dataset = parts.keywords.iris("default"), parts.facts(), parts.snapshot()
    update = parts.store.update

    def commit_fails(text: str) -> None:  # the store goes away as the commit is sent
        if "reifies" in text:  # the commit: the only update that writes facts
            raise StoreUnavailable("the store process ended")
        update(text)

    monkeypatch.setattr(parts.store, "update", commit_fails)
    with pytest.raises(StoreUnavailable):
        parts.ingest("curie", "\n\n".join(PARAGRAPHS) + "\n\nIrene Joliot-Curie was born in Paris.")
    monkeypatch.setattr(parts.store, "update", update)
    assert {kind: parts.vectors.iris("default", kind) for kind in KINDS} == before  # written, then taken back
    assert parts.keywords.iris("default") == keywords and parts.facts() == facts
    record = f"<{parts.iris.document('curie').value}> ".encode()
    assert [line for line in parts.snapshot() if not line.startswith(record)] == [
        line for line in dataset if not line.startswith(record)
    ]  # only the document's record changed: the new version's hash, and "failed"
    (info,) = librarian.documents(parts.store, parts.iris)
    assert info.status == "failed" and info.chunks == 2
    assert parts.ingest("curie", "\n\n".join(PARAGRAPHS)).status == "ready"  # a retry reuses its extractions
    assert len(parts.vectors.iris("default", "chunks")) == 3


def test_an_accepted_document_is_decoded_once(parts: PipelineParts, monkeypatch: pytest.MonkeyPatch) -> None:
    """`submit` decodes to refuse a bad document before writing; the background ingest takes
    that text on instead of decoding the bytes again (issue 53)."""
    decoded: list[str | None] = []
    decode = parts.pipeline.decoder.decode

    async def counted(data: bytes, media_type: str | None, filename: str | None) -> Decoded:
        decoded.append(filename)
        return await decode(data, media_type, filename)

    monkeypatch.setattr(parts.pipeline.decoder, "decode", counted)

    async def run() -> None:
        sources = [Source("c", b"Ada Lovelace wrote the first program.", filename="c.txt")]
        await parts.pipeline.submit(DEFAULT, [*sources, Source("d", b"Alan Turing was born in London.")])
        await parts.pipeline.wait_background()

    asyncio.run(run())
    assert sorted(decoded, key=str) == sorted(["c.txt", None], key=str)  # each document once
    assert [(i.id, i.status) for i in librarian.documents(parts.store, parts.iris) if i.id in "cd"] == [
        ("c", "ready"),
        ("d", "ready"),
    ]
