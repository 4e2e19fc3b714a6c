"""Extraction guided by an ontology: entities typed by its classes, facts on its properties.

With an LLM, the chunk's ontology subset (selection.py) goes into the `extract_with_ontology`
prompt; what comes back is checked against the ontology before it becomes knowledge: classes
and properties must exist, a relationship's subject must fit the property's domain and its
object the range (subclasses count), an attribute must use a datatype property. What fails is
dropped and counted (`sr:rejected` on the chunk's extraction activity).

Offline, the NLP extractor runs as usual and an entity is typed when its name ends in, or an
"is a" fact about it names, the label of a class in the chunk's subset ("Acme Corporation",
"Warsaw is a city"), so the offline path still writes typed entities and `rdf:type` facts.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from sparqlrag.extraction.guidance import Guide, Guides, Ontology, Terms
from sparqlrag.extraction.knowledge import Entity, Fact, Knowledge
from sparqlrag.extraction.offline import OfflineExtractor
from sparqlrag.library import librarian
from sparqlrag.models.llm import ChatModel
from sparqlrag.models.prompts import json_items, render
from sparqlrag.store.base import QuadStore
from sparqlrag.store.vocab import Iris, local_name
from sparqlrag.threads import off_loop

IS_A = {"is a", "is an", "was a", "was an", "is the", "was the"}


class _Resolver:
    """Maps what the LLM wrote (an IRI, a label, a local name; any case) to the ontology's IRIs."""

    def __init__(self, model: Terms) -> None:
        self.classes = self._keys({c.iri: (c.label, local_name(c.iri)) for c in model.classes.values()})
        self.properties = self._keys({p.iri: (p.label, local_name(p.iri)) for p in model.properties.values()})

    @staticmethod
    def _keys(names: dict[str, tuple[str, str]]) -> dict[str, str]:
        keys: dict[str, str] = {}
        for iri, others in names.items():
            for key in (iri, *others):
                keys.setdefault(key.strip().lower(), iri)
        return keys

    @staticmethod
    def _find(keys: dict[str, str], value: Any) -> str | None:
        return keys.get(value.strip().lower()) if isinstance(value, str) and value.strip() else None

    def cls(self, value: Any) -> str | None:
        return self._find(self.classes, value)

    def property(self, value: Any) -> str | None:
        return self._find(self.properties, value)


def conform(ontology_model: Ontology, ontology: str, answer: Any) -> Knowledge:
    """The LLM's answer as knowledge that fits the ontology; everything else counted as rejected."""
    resolve = _Resolver(ontology_model)
    answer = answer if isinstance(answer, dict) else {}
    rejected = 0
    entities: dict[str, Entity] = {}
    for item in _list(answer.get("entities")):
        name, cls = _string(item, "name"), resolve.cls(item.get("class")) if isinstance(item, dict) else None
        if name and cls:
            entities.setdefault(name, Entity(name, type=cls))
        else:
            rejected += 1
    facts: list[Fact] = []
    for item in _list(answer.get("relationships")):
        subject, obj = _string(item, "subject"), _string(item, "object")
        prop = resolve.property(item.get("property")) if isinstance(item, dict) else None
        spec = ontology_model.properties.get(prop or "")
        if (
            spec is None
            or spec.kind != "object"
            or subject not in entities
            or obj not in entities
            or not ontology_model.is_a(entities[subject].type or "", spec.domain)
            or not ontology_model.is_a(entities[obj].type or "", spec.range)
        ):
            rejected += 1
            continue
        facts.append(Fact(subject, spec.label, obj, True, property=spec.iri))
    for item in _list(answer.get("attributes")):
        subject, value = _string(item, "entity"), _string(item, "value")
        prop = resolve.property(item.get("property")) if isinstance(item, dict) else None
        spec = ontology_model.properties.get(prop or "")
        if (
            spec is None
            or spec.kind != "datatype"
            or subject not in entities
            or not value
            or not ontology_model.is_a(entities[subject].type or "", spec.domain)
        ):
            rejected += 1
            continue
        facts.append(Fact(subject, spec.label, value, False, property=spec.iri))
    return Knowledge(list(entities.values()), facts, rejected, ontology)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _string(item: Any, key: str) -> str | None:
    value = item.get(key) if isinstance(item, dict) else None
    return " ".join(value.split()) if isinstance(value, str) and value.strip() else None


class _Subsets:
    """The ontology subsets of the chunks an extractor is about to read. The pipeline hands over
    each document's chunks first (`prepare`), and the documents of one ingest are prepared
    concurrently: what they queue while a selection runs is selected together in the next, 16
    chunks per model call. The model runs ~2x faster per chunk on 16 chunks at a time than on
    one (bench/ontology_selection.py), and a corpus of one-chunk documents would select singly."""

    BATCH = 16

    def __init__(self, ontology: str, guide: Guide[Any]) -> None:
        self.ontology, self.guide = ontology, guide
        self._ready: dict[str, Terms] = {}
        self._queued: dict[str, None] = {}  # an ordered set
        self._turn = asyncio.Lock()

    async def prepare(self, texts: list[str]) -> None:
        self._queued.update(dict.fromkeys(t for t in texts if t not in self._ready))
        async with self._turn:  # the caller that gets the turn selects all that is queued by then
            todo, self._queued = list(self._queued), {}
            for start in range(0, len(todo), self.BATCH):
                batch = todo[start : start + self.BATCH]
                self._ready.update(zip(batch, await off_loop(self.guide.subsets, batch)))

    def subset(self, text: str) -> Terms:
        """The prepared subset of `text` (given up: each chunk is read once), or a fresh one."""
        return self._ready.pop(text, None) or self.guide.subsets([text])[0]


class GuidedExtractor(_Subsets):
    """LLM extraction with an ontology subset in the prompt, checked against the ontology."""

    name = "llm+ontology"

    def __init__(
        self,
        llm: ChatModel,
        ontology: str,
        guide: Guide[Any],
        prompts_dir: Path | None = None,
        max_tokens: int = 4096,
    ) -> None:
        super().__init__(ontology, guide)
        self.llm, self.llm_name, self.prompts_dir, self.max_tokens = llm, llm.name, prompts_dir, max_tokens

    async def extract(self, text: str, document_id: str = "") -> Knowledge:
        subset = await off_loop(self.subset, text)
        prompt = render("extract_with_ontology", self.prompts_dir, text=text, **self.guide.describe(subset))
        completion = await self.llm.complete(prompt, max_tokens=self.max_tokens)
        items = json_items(completion.text)
        return conform(self.guide.ontology, self.ontology, items[0] if items else None)


class TypedOfflineExtractor(_Subsets):
    """The offline extractor, its entities typed by the class labels of the chunk's subset."""

    name = "offline+ontology"
    llm_name = None

    def __init__(self, ontology: str, guide: Guide[Any], offline: OfflineExtractor | None = None) -> None:
        super().__init__(ontology, guide)
        self.offline = offline or OfflineExtractor()

    async def extract(self, text: str, document_id: str = "") -> Knowledge:
        return await off_loop(self.extract_sync, text)

    def extract_sync(self, text: str) -> Knowledge:
        knowledge = self.offline.extract_sync(text)
        subset = self.subset(text)
        labels = {_plain(c.label): c.iri for c in subset.classes.values()}
        labels.update(
            {
                _plain(local_name(c.iri)): c.iri
                for c in subset.classes.values()
                if _plain(local_name(c.iri)) not in labels
            }
        )
        said: dict[str, str] = {}  # "Warsaw is a city": the class an is-a fact names
        for fact in knowledge.facts:
            if fact.predicate in IS_A:
                cls = _named_class(fact.object, labels)
                if cls:
                    said.setdefault(fact.subject, cls)
        typed = [
            replace(e, type=said.get(e.name) or _named_class(e.name, labels, last_word_only=True))
            for e in knowledge.entities
        ]
        return replace(knowledge, entities=typed, ontology=self.ontology)


def _plain(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text).lower()))


def _named_class(phrase: str, labels: dict[str, str], last_word_only: bool = False) -> str | None:
    """The class whose label ends the phrase ("Acme Corporation", "a large city"), longest first;
    with `last_word_only`, one-word labels only (a name is not its description)."""
    words = _plain(phrase).split()
    for size in range(1 if last_word_only else min(3, len(words)), 0, -1):
        tail = " ".join(words[-size:])
        if tail in labels:
            return labels[tail]
        if tail.endswith("s") and tail[:-1] in labels:  # a plural in -s
            return labels[tail[:-1]]
    return None


class CollectionExtractors:
    """The extractor of a collection created with an ontology (None for the others): guided by
    the LLM when extraction is the LLM's, else the typed offline one."""

    def __init__(
        self,
        store: QuadStore,
        guides: Guides,
        llm: ChatModel | None,
        prompts_dir: Path | None = None,
    ) -> None:
        self.store, self.guides = store, guides
        self.llm, self.prompts_dir = llm, prompts_dir

    async def __call__(self, iris: Iris) -> GuidedExtractor | TypedOfflineExtractor | None:
        name = await off_loop(librarian.collection_ontology, self.store, iris)
        if name is None:
            return None
        guide = await off_loop(self.guides.get, name)
        if self.llm is not None:
            return GuidedExtractor(self.llm, name, guide, self.prompts_dir)
        return TypedOfflineExtractor(name, guide)
