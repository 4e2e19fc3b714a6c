"""What Graph RAG's synthesis is given (the kept facts, cited, then the passages) and, offline,
the answer it writes from the facts alone."""

from __future__ import annotations

from pyoxigraph import Triple

from sparqlrag.retrieval.walk import Edge, Walk


def knowledge(walk: Walk) -> str:
    """The synthesis prompt's knowledge: each kept fact citing the passages that support it, then the passages."""
    numbers = {p.chunk: i for i, p in enumerate(walk.passages, start=1)}
    facts = [f"- {edge.text}{_citation(edge, numbers)}" for edge in walk.edges]
    sources = [f"[{i}] ({p.citation}) {p.text}" for i, p in enumerate(walk.passages, start=1)]
    return "Facts from the knowledge graph:\n" + "\n".join(facts) + "\n\nSources:\n" + "\n\n".join(sources)


def facts_answer(walk: Walk, facts: int = 5) -> str:
    """Offline: the best facts, each followed by the best fact the walk continued it with (so a
    multi-hop answer reaches the end of its path), each as its evidence sentence when known,
    cited; empty when the walk kept no facts."""
    numbers = {p.chunk: i for i, p in enumerate(walk.passages, start=1)}
    following = continuations(walk)
    said: dict[str, str] = {}  # sentence -> with its citation

    def say(edge: Edge) -> None:
        said.setdefault(edge.sentence_text, edge.sentence_text + _citation(edge, numbers))

    for edge in walk.edges:
        say(edge)
        if edge.fact in following and len(said) < facts:
            say(following[edge.fact])
        if len(said) >= facts:
            break
    return " ".join(said.values())


def continuations(walk: Walk) -> dict[Triple, Edge]:
    """Each kept fact's best continuation: the kept fact the walk reached through it with the
    highest score, or, when the question asks several things ("Where did she work, and where
    is that?"), the one nearest its last clause, which follows up on what the earlier ones ask."""
    grounding = walk.grounding
    follow_up = grounding.path_vectors[-1] if grounding is not None and len(grounding.path_targets) > 1 else None

    def rank(edge: Edge) -> float:
        return float(edge.vector @ follow_up) if follow_up is not None and edge.vector is not None else edge.score

    best: dict[Triple, Edge] = {}
    for edge in walk.edges:
        if edge.via is not None and (edge.via.fact not in best or rank(best[edge.via.fact]) < rank(edge)):
            best[edge.via.fact] = edge
    return best


def _citation(edge: Edge, numbers: dict[str, int]) -> str:
    cited = sorted({numbers[c] for c in edge.chunks if c in numbers})
    return f" [{', '.join(map(str, cited))}]" if cited else ""
