"""What Graph RAG's answer is made from: for the LLM, the passages first, then the bridge
passages and the kept facts, each labelled; offline, the same passages' sentences and the facts
as candidates for the sentences that answer (retrieval/extractive.py)."""

from __future__ import annotations

from sparqlrag.retrieval.extractive import Candidate
from sparqlrag.retrieval.walk import Edge, Retrieval, fact_texts
from sparqlrag.store import vocab


def knowledge(found: Retrieval) -> str:
    """The synthesis prompt's knowledge: the passages, numbered; the bridge passages, numbered on,
    each with the path that brought it; then each kept fact citing the passages that state it."""
    numbers = {p.chunk: i for i, p in enumerate(found.passages, start=1)}
    passages = [f"[{i}] ({p.citation}) {p.text}" for i, p in enumerate(found.passages, start=1) if not p.bridge]
    said = fact_texts(found.edges)
    bridges = [
        f"[{i}] ({p.citation}; reached through: {' -> '.join(said[f] for f in p.bridge)}) {p.text}"
        for i, p in enumerate(found.passages, start=1)
        if p.bridge
    ]
    facts = [f"- {edge.text}{_citation(edge, numbers)}" for edge in found.edges]
    parts = ["Passages:\n" + "\n\n".join(passages)]
    if bridges:
        parts.append("Bridge passages (found through the knowledge graph's facts):\n" + "\n\n".join(bridges))
    parts.append("Facts from the knowledge graph:\n" + "\n".join(facts))
    return "\n\n".join(parts)


def fact_candidates(found: Retrieval) -> list[Candidate]:
    """Each kept fact that states a relation (a co-occurrence states none), best first, as a
    sentence that may answer: its evidence sentence, judged as the path it completes, cited by the
    passages shown that state it, else as the answer's fact of its place ("fact 2")."""
    numbers = {p.chunk: i for i, p in enumerate(found.passages, start=1)}
    return [
        Candidate(
            edge.sentence_text,
            _cited(edge, numbers) or f"fact {place}",
            edge.path_text,
            frozenset([edge.via.sentence_text]) if edge.via else frozenset(),
            unsourced=not edge.chunks,
        )
        for place, edge in enumerate(found.edges, start=1)
        if edge.fact.predicate != vocab.SR_COOCCURS
    ]


def _cited(edge: Edge, numbers: dict[str, int]) -> str:
    return ", ".join(map(str, sorted({numbers[c] for c in edge.chunks if c in numbers})))


def _citation(edge: Edge, numbers: dict[str, int]) -> str:
    cited = _cited(edge, numbers)
    return f" [{cited}]" if cited else ""
