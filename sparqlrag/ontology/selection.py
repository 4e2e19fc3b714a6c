"""Which part of an ontology a chunk of text is about: what an extraction prompt is shown.

A large ontology does not fit a prompt, and most of it is irrelevant to any one chunk. Its
classes and properties are embedded once (label, local name, the first sentence of the
comment) into a FAISS inner-product index. Each sentence of a chunk is then a query through
its candidate phrases that share a word with some element's name ("Acme Corporation" for an
ontology with a Corporation), or, when it has none, through its gist (its first content words),
which catches what it says in other words. All queries of a batch of chunks are embedded in one
model call; each finds its `top_k` nearest elements at or above `threshold`. (Embedding every
sentence whole and every phrase ran at 3.8 chunks/s on the bench: the model costs ~0.2 ms per
token on 2 cores, and a 2,000-character chunk has ~450.) The subset is those elements, the
parents of every selected class, the domain and range of every selected property, and the
properties whose domain or range is a selected class. An ontology of fewer than `WHOLE_BELOW`
elements is passed whole.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

import numpy as np

from sparqlrag.models.embedder import Embedder
from sparqlrag.models.sentences import sentence_splitter
from sparqlrag.ontology.owl import OntClass, OntologyModel, OntProperty
from sparqlrag.ontology.registry import Ontologies
from sparqlrag.store.vocab import local_name

WHOLE_BELOW = 5
MAX_PHRASE_WORDS = 3
MAX_SENTENCE_WORDS = 8  # content words of a sentence query: a 100-word list sentence would cost ~10x to embed
STOPWORDS = frozenset(
    """a an the and or but nor of in on at to for from by with without into onto over under about
    above below between among through during before after since until as than then that this these those there here
    is are was were be been being am has have had do does did will would can could shall should may might must
    it its it's he she they them their his her hers we us our you your i me my mine who whom whose which what when
    where why how not no yes all any each every some such only also very more most much many few other another same
    own so too just one ones s t""".split()
)
_WORD = re.compile(r"[^\W_][\w'-]*", re.UNICODE)
_SENTENCES = sentence_splitter()


@dataclass(frozen=True)
class Subset:
    """The classes and properties shown to the extractor, with the score that selected each
    directly (elements added as parents, domains or ranges have none)."""

    classes: dict[str, OntClass]
    properties: dict[str, OntProperty]
    scores: dict[str, float] = field(default_factory=dict)


def candidate_phrases(sentence: str) -> list[str]:
    """Runs of up to three content words, broken by stop words, punctuation and a change
    between capitalised and lower-case words ("Acme Corporation" | "employs"): the noun
    phrases and names a tagger would find, without needing one."""
    phrases: list[str] = []
    for part in re.split(r"[^\w\s'-]", sentence):
        run: list[str] = []
        for word in [*_WORD.findall(part), ""]:
            content = bool(word) and word.lower() not in STOPWORDS and not word.isdigit()
            if content and (not run or run[-1][:1].isupper() == word[:1].isupper()):
                run.append(word)
                continue
            for start in range(0, len(run), MAX_PHRASE_WORDS):
                phrases.append(" ".join(run[start : start + MAX_PHRASE_WORDS]))
            run = [word] if content else []
    return list(dict.fromkeys(phrases))


def gist(sentence: str) -> str:
    """A sentence as a query: its first content words (stop words cost tokens, not meaning)."""
    return " ".join([w for w in _WORD.findall(sentence) if w.lower() not in STOPWORDS][:MAX_SENTENCE_WORDS])


def stems(text: str) -> set[str]:
    """Lower-case content words, a plural -s dropped: what a phrase and a label must share."""
    words = re.findall(r"[a-z0-9]+", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text).lower())
    return {
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words if w not in STOPWORDS
    }


def element_text(label: str, iri: str, comment: str) -> str:
    """What an element is embedded as: its label, its local name when that says more, and the
    first sentence of its comment (a whole comment buries the name)."""
    name = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", local_name(iri))
    text = label if name.lower() == label.lower() else f"{label} ({name})"
    sentences = _SENTENCES.tokenize(comment)
    gloss = " ".join(sentences[0].split())[:200] if sentences else ""
    return f"{text}: {gloss}" if gloss else text


class ElementIndex:
    """One ontology's classes and properties in a FAISS inner-product index (vectors normalised,
    so scores are cosines)."""

    def __init__(self, model: OntologyModel, embedder: Embedder) -> None:
        import faiss

        self.ontology_model = model
        elements: list[OntClass | OntProperty] = [*model.classes.values(), *model.properties.values()]
        self.iris = [e.iri for e in elements]
        self.vocabulary = {stem for e in elements for stem in stems(f"{e.label} {local_name(e.iri)}")}
        self.properties_of: dict[str, set[str]] = {}  # class -> the properties whose domain or range it is
        for prop in model.properties.values():
            for cls in {*prop.domain, *prop.range}:
                self.properties_of.setdefault(cls, set()).add(prop.iri)
        vectors = embedder.embed([element_text(e.label, e.iri, e.comment) for e in elements])
        self._index = faiss.IndexFlatIP(embedder.dim)
        if len(vectors):
            self._index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        self._lock = threading.Lock()  # faiss indexes are not safe to search from several threads

    def __len__(self) -> int:
        return len(self.iris)

    def search(self, vectors: np.ndarray, top_k: int) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            return self._index.search(np.ascontiguousarray(vectors, dtype=np.float32), min(top_k, len(self.iris)))


class ElementIndexes:
    """Each loaded ontology's element index, built on first use and again after a reload (its
    file's hash changed): what extraction and NL queries select from."""

    def __init__(self, ontologies: Ontologies, embedder: Embedder) -> None:
        self.ontologies, self.embedder = ontologies, embedder
        self._built: dict[str, tuple[str, ElementIndex]] = {}  # name -> (sha256, index)

    def get(self, name: str) -> ElementIndex:
        """Raises UnknownOntology."""
        sha256 = self.ontologies.info_sync(name).sha256
        if name not in self._built or self._built[name][0] != sha256:
            self._built[name] = (sha256, ElementIndex(self.ontologies.model_sync(name), self.embedder))
        return self._built[name][1]


class Selector:
    def __init__(self, embedder: Embedder, threshold: float = 0.3, top_k: int = 10) -> None:
        self.embedder, self.threshold, self.top_k = embedder, threshold, top_k

    def select(self, index: ElementIndex, chunks: list[str]) -> list[Subset]:
        """One subset per chunk; the queries of all the chunks in one embedding call."""
        model = index.ontology_model
        if len(index) < WHOLE_BELOW:
            return [Subset(dict(model.classes), dict(model.properties)) for _ in chunks]
        queries: list[list[str]] = []
        for chunk in chunks:
            texts: list[str] = []
            for sentence in _SENTENCES.tokenize(chunk):
                named = [p for p in candidate_phrases(sentence) if stems(p) & index.vocabulary]
                texts += named or [g for g in [gist(sentence)] if g]
            queries.append(list(dict.fromkeys(texts)))
        texts = sorted({text for texts in queries for text in texts})
        if not texts:
            return [Subset({}, {}) for _ in chunks]
        row = {text: i for i, text in enumerate(texts)}
        scores, found = index.search(self.embedder.embed(texts), self.top_k)
        subsets = []
        for chunk_queries in queries:
            best: dict[str, float] = {}
            for text in chunk_queries:
                for score, element in zip(scores[row[text]], found[row[text]]):
                    if element >= 0 and score >= self.threshold:
                        iri = index.iris[element]
                        best[iri] = max(best.get(iri, -1.0), float(score))
            subsets.append(expand(index, best))
        return subsets


def expand(index: ElementIndex, selected: dict[str, float]) -> Subset:
    """The selected elements with what gives them meaning: each class's parents up the
    hierarchy, each property's domain and range, the properties of the selected classes."""
    model = index.ontology_model
    classes = {iri for iri in selected if iri in model.classes}
    properties = {iri for iri in selected if iri in model.properties}
    properties |= {prop for cls in classes for prop in index.properties_of.get(cls, ())}
    for iri in properties:
        classes |= {c for c in (*model.properties[iri].domain, *model.properties[iri].range) if c in model.classes}
    # parents give the classes meaning, but not their properties: a selected Person does not
    # bring in every property of Thing
    classes = {ancestor for iri in classes for ancestor in model.ancestors(iri) if ancestor in model.classes}
    return Subset(
        {iri: model.classes[iri] for iri in sorted(classes)},
        {iri: model.properties[iri] for iri in sorted(properties)},
        selected,
    )


def describe(subset: Subset) -> dict[str, str]:
    """The subset as a prompt shows it (classes, object_properties, datatype_properties): one
    line per element, IRI first, with its parents or its domain and range."""
    labels = {c.iri: c.label for c in subset.classes.values()}

    def names(iris: tuple[str, ...]) -> str:
        return " or ".join(labels.get(i, local_name(i)) for i in iris) or "anything"

    classes = [
        f"- {c.iri} ({c.label})"
        + (f", a kind of {names(c.parents)}" if c.parents else "")
        + (f": {c.comment[:160]}" if c.comment else "")
        for c in subset.classes.values()
    ]

    def lines(kind: str) -> list[str]:
        return [
            f"- {p.iri} ({p.label}): {names(p.domain)} -> {names(p.range)}"
            for p in subset.properties.values()
            if p.kind == kind
        ]

    return {
        "classes": "\n".join(classes) or "(none)",
        "object_properties": "\n".join(lines("object")) or "(none)",
        "datatype_properties": "\n".join(lines("datatype")) or "(none)",
    }


@dataclass(frozen=True)
class OntologyGuide:
    """One ontology as guided extraction reads it (extraction.guidance.Guide)."""

    index: ElementIndex
    selector: Selector

    @property
    def ontology(self) -> OntologyModel:
        return self.index.ontology_model

    def subsets(self, chunks: list[str]) -> list[Subset]:
        return self.selector.select(self.index, chunks)

    def describe(self, subset: Subset) -> dict[str, str]:
        return describe(subset)


class OntologyGuides:
    """Every loaded ontology's guide (extraction.guidance.Guides), over the shared indexes."""

    def __init__(self, indexes: ElementIndexes, selector: Selector) -> None:
        self.indexes, self.selector = indexes, selector

    def get(self, name: str) -> OntologyGuide:
        return OntologyGuide(self.indexes.get(name), self.selector)
