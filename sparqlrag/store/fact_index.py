"""The fact index: every walked fact's text embedded once, when the fact is written.

Graph RAG scores the edges of a hop against the question; embedding each candidate's text at
question time cost one model run per candidate (1.7 s a question at 170k facts). Here a fact's
vector is computed when the fact is written (ingest, triples import, `sparqlrag index`; a
knowledge core carries them), so scoring a hop is a lookup and one matrix product, and the
question's nearest facts can seed the walk. A point is named by the fact's reifier IRI, so
re-extracting a fact finds its point again and forgetting the fact removes it.

A co-occurrence says no more than its two entities: its vector is the sum of theirs, from the
entity index, with no model run (7 in 10 of the offline extractor's facts are co-occurrences).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
from pyoxigraph import NamedNode, Triple

from sparqlrag.store import vocab
from sparqlrag.store.base import QuadStore
from sparqlrag.store.facts import fact_ntriples, fact_text, labels_of, walked
from sparqlrag.store.vector_index import VectorIndex, unit
from sparqlrag.store.vocab import Iris

Embed = Callable[[Sequence[str]], np.ndarray]


def _iri(term: object) -> str:
    """An end of a co-occurrence: always an entity IRI."""
    assert isinstance(term, NamedNode)
    return term.value


class FactIndex:
    def __init__(self, store: QuadStore, vectors: VectorIndex, embed: Embed) -> None:
        self.store, self.vectors, self.embed = store, vectors, embed

    def add(self, iris: Iris, triples: Iterable[Triple], labels: dict[str, str] | None = None) -> list[Triple]:
        """Vectors for the walked facts among `triples` that have none yet; `labels` may name
        terms the store does not label yet (a batch being written). Returns the facts written."""
        facts = {iris.statement(t).value: t for t in triples if walked(t)}
        known = self.vectors.existing(iris.collection, "facts", list(facts))
        new = {statement: t for statement, t in facts.items() if statement not in known}
        if not new:
            return []
        labels = labels_of(self.store, iris, new.values(), labels)
        matrix = self.compute(iris, list(new.values()), labels)
        payloads = [{"fact": fact_ntriples(t), "text": fact_text(t, labels)} for t in new.values()]
        self.vectors.upsert(iris.collection, "facts", list(new), matrix, payloads)
        return list(new.values())

    def compute(self, iris: Iris, triples: list[Triple], labels: dict[str, str]) -> np.ndarray:
        """The facts' vectors, unit length: co-occurrences from their entities' vectors, the
        rest from their text, in one embedding call."""
        cooccurring = [i for i, t in enumerate(triples) if t.predicate == vocab.SR_COOCCURS]
        ends = sorted({_iri(term) for i in cooccurring for term in (triples[i].subject, triples[i].object)})
        stored = self.vectors.vectors_of(iris.collection, "entities", ends) if ends else {}
        texts = [fact_text(t, labels) for t in triples]
        wanted = [i for i, t in enumerate(triples) if t.predicate != vocab.SR_COOCCURS]
        unlabelled = [node for node in ends if node not in stored]
        computed = self.embed([texts[i] for i in wanted] + [labels.get(node, node) for node in unlabelled])
        entity = {**stored, **dict(zip(unlabelled, computed[len(wanted) :]))}
        matrix = np.zeros((len(triples), self.vectors.dim), dtype=np.float32)
        if wanted:
            matrix[wanted] = computed[: len(wanted)]
        for i in cooccurring:
            matrix[i] = entity[_iri(triples[i].subject)] + entity[_iri(triples[i].object)]
        return unit(matrix)

    def lookup(self, iris: Iris, triples: list[Triple], labels: dict[str, str]) -> np.ndarray:
        """The facts' vectors, one row each: from the index, or computed now for facts written
        around it (SPARQL Update, a load not yet indexed)."""
        statements = [iris.statement(t).value for t in triples]
        stored = self.vectors.vectors_of(iris.collection, "facts", statements)
        missing = [i for i, s in enumerate(statements) if s not in stored]
        matrix = np.zeros((len(triples), self.vectors.dim), dtype=np.float32)
        found = [i for i, s in enumerate(statements) if s in stored]
        if found:
            matrix[found] = unit(np.stack([stored[statements[i]] for i in found]))
        if missing:
            matrix[missing] = self.compute(iris, [triples[i] for i in missing], labels)
        return matrix

    def remove(self, iris: Iris, statements: list[str]) -> None:
        self.vectors.delete(iris.collection, "facts", statements)
