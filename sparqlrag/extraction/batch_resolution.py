"""Entity resolution for a batch of documents: each document's names resolved against the
collection and against the batch's other documents (the rules are in resolution.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from sparqlrag.extraction import resolver
from sparqlrag.extraction.knowledge import Knowledge
from sparqlrag.extraction.names import name_key
from sparqlrag.extraction.plans import Plan
from sparqlrag.extraction.provenance import entity_iri
from sparqlrag.extraction.resolution import Candidate, Known, Mention, Resolution, completed, mentions_of, resolve
from sparqlrag.models.embedder import Embedder
from sparqlrag.store.base import QuadStore
from sparqlrag.store.vector_index import VectorIndex
from sparqlrag.store.vocab import Iris
from sparqlrag.threads import off_loop


async def resolve_batch(
    store: QuadStore, vectors: VectorIndex, embedder: Embedder, iris: Iris, plans: list[Plan]
) -> list[Plan]:
    """The plans with each document's names resolved against the collection and the batch's
    other documents, then again with the shared merges the batch found, so that a name one
    document defines resolves in the others. The rules run off the event loop."""

    def mint(mention: Mention, ontology: str | None) -> str:
        return entity_iri(iris, mention, ontology).value

    plans = [replace(plan, knowledge=_completed(plan)) for plan in plans]
    uses = await off_loop(_uses, plans, mint)
    known = await off_loop(resolver.known, store, iris, {name_key(m.name) for _, m, _, _ in uses})
    _batch_candidates(known, uses)
    named: dict[Mention, tuple[str, str | None]] = {}  # a name -> its own IRI, and a definition the batch gives it
    for _, mention, iri, definition in uses:
        if named.get(mention, ("", None))[1] is None:
            named[mention] = (iri, definition)
    known.similar = await off_loop(resolver.similar, store, vectors, embedder, iris, named)
    resolutions = await off_loop(_resolve_all, plans, known, mint)
    return [replace(plan, resolution=resolution) for plan, resolution in zip(plans, resolutions, strict=True)]


def _completed(plan: Plan) -> list[tuple[Knowledge, datetime, datetime]]:
    """Each chunk's knowledge with the expansions its text gives its acronyms, which the
    extractor may have missed."""
    return [
        (completed(k, chunk.text), started, ended) for chunk, (k, started, ended) in zip(plan.added, plan.knowledge)
    ]


def _uses(plans: list[Plan], mint: Callable[[Mention, str | None], str]) -> list[tuple[int, Mention, str, str | None]]:
    """Each name each document of the batch uses, chunk by chunk: (the document's index, the
    mention, its own IRI, the chunk's definition of it)."""
    uses = []
    for index, plan in enumerate(plans):
        for _, _, knowledge in plan.chunks():
            definitions = {e.name: e.definition for e in knowledge.entities if e.definition}
            uses += [(index, m, mint(m, knowledge.ontology), definitions.get(m.name)) for m in mentions_of(knowledge)]
    return uses


def _batch_candidates(known: Known, uses: list[tuple[int, Mention, str, str | None]]) -> None:
    """The names that documents of the batch share by key, as candidates for one another
    (the store cannot show them yet: they are written after resolution)."""
    named: dict[str, dict[Mention, tuple[int, str]]] = {}
    for index, mention, iri, _ in uses:
        named.setdefault(name_key(mention.name), {})[mention] = (index, iri)
    for key, mentions in named.items():
        if len({index for index, _ in mentions.values()}) > 1:
            known.by_key.setdefault(key, []).extend(
                Candidate(iri, m.name, iri, m.name, m.type, held=False) for m, (_, iri) in mentions.items()
            )


def _resolve_all(plans: list[Plan], known: Known, mint: Callable[[Mention, str | None], str]) -> list[Resolution]:
    """Each document's resolution; when the batch found shared merges, made again with them."""
    resolutions = [resolve(plan.chunks(), known, mint) for plan in plans]
    found = [(resolution, m) for resolution in resolutions for m in resolution.merges if m.shared]
    if len(plans) > 1 and found:
        for resolution, merge in found:
            canonical = resolution.roots[merge.alias_iri]
            candidate = Candidate(
                merge.alias_iri, merge.alias, canonical, resolution.names[canonical], resolution.classes[canonical]
            )
            known.by_key.setdefault(name_key(merge.alias), []).append(candidate)
        resolutions = [resolve(plan.chunks(), known, mint) for plan in plans]
    return resolutions
