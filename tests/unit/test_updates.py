"""The SPARQL updates that change a document (extraction/updates.py), run on an in-memory store."""

from __future__ import annotations

from pyoxigraph import Literal, NamedNode, Quad, Store, Triple

from sparqlrag.extraction.provenance import ChunkRecord
from sparqlrag.extraction.updates import placement, removal
from sparqlrag.store import vocab
from sparqlrag.store.select import lexical
from sparqlrag.store.sparql_text import VALUES_BATCH
from sparqlrag.store.vocab import Iris

IRIS = Iris("http://kb.example/")
SRC, KG = IRIS.source_graph, IRIS.knowledge_graph
DOC = IRIS.document("d")
A, B = IRIS.chunk(DOC, "chunk a"), IRIS.chunk(DOC, "chunk b")


def fact(name: str) -> Triple:
    return Triple(IRIS.entity(name), NamedNode("http://kb.example/rel/knows"), IRIS.entity("someone"))


def supported(store: Store, triple: Triple, *chunks: NamedNode) -> NamedNode:
    """The fact in the knowledge graph and its reifier, derived from `chunks`."""
    statement = IRIS.statement(triple)
    store.add(Quad(triple.subject, triple.predicate, triple.object, KG))
    store.add(Quad(statement, vocab.RDF_REIFIES, triple, SRC))
    for chunk in chunks:
        store.add(Quad(statement, vocab.PROV_DERIVED, chunk, SRC))
    return statement


def test_removing_a_chunk_drops_the_facts_only_it_supported_and_keeps_the_others() -> None:
    store = Store()
    only_a, shared = fact("only-a"), fact("shared")
    statements = [supported(store, only_a, A), supported(store, shared, A, B)]
    for chunk in (A, B):
        store.add(Quad(chunk, vocab.SR_TEXT, Literal("text"), SRC))
    store.update(vocab.SPARQL_PREFIXES + removal(IRIS, [A.value], [s.value for s in statements]))
    kept = {(q.subject, q.predicate, q.object) for q in store.quads_for_pattern(None, None, None, KG)}
    assert kept == {(shared.subject, shared.predicate, shared.object)}
    assert not list(store.quads_for_pattern(statements[0], None, None, SRC))  # its reifier went with it
    assert [q.object for q in store.quads_for_pattern(statements[1], vocab.PROV_DERIVED, None, SRC)] == [B]
    assert not list(store.quads_for_pattern(A, None, None, SRC)) and list(store.quads_for_pattern(B, None, None, SRC))
    assert removal(IRIS, [], []) == ""  # nothing to remove: no update at all


def test_placement_moves_kept_chunks_to_their_new_offsets() -> None:
    store = Store()
    for chunk, offset in ((A, 0), (B, 10)):
        store.add(Quad(chunk, vocab.SR_OFFSET, Literal(offset), SRC))
        store.add(Quad(chunk, vocab.SR_INDEX, Literal(offset // 10), SRC))
    moved = [ChunkRecord(DOC, A, 1, 25, "chunk a")]
    store.update(vocab.SPARQL_PREFIXES + placement(IRIS, moved))
    offsets = {q.subject: int(lexical(q.object)) for q in store.quads_for_pattern(None, vocab.SR_OFFSET, None, SRC)}
    indexes = {q.subject: int(lexical(q.object)) for q in store.quads_for_pattern(None, vocab.SR_INDEX, None, SRC)}
    assert offsets == {A: 25, B: 10} and indexes == {A: 1, B: 1}


def test_a_big_documents_removal_runs_in_slices_and_removes_it_all() -> None:
    """More statements than one VALUES block holds (a store's limit): every one still goes."""
    store = Store()
    statements = [supported(store, fact(f"e{i}"), A).value for i in range(VALUES_BATCH + 7)]
    update = removal(IRIS, [A.value], statements)
    assert update.count("VALUES ?st") == 6  # three operations, two slices each
    store.update(vocab.SPARQL_PREFIXES + update)
    assert not list(store.quads_for_pattern(None, None, None, KG)) and not list(
        store.quads_for_pattern(None, None, None, SRC)
    )
