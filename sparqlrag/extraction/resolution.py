"""Entity resolution: which names in a batch of documents name one thing, and the evidence.

Each rule is evidence a person can check against the text:
- "normalised": equal once case, diacritics, punctuation, a leading "the" and a plural -s are
  set aside ("The W3C", "W3C");
- "acronym": the text defines one name as the other ("World Wide Web Consortium (W3C)", "is
  known as the W3C", "W3C stands for ...") and the acronym's letters are the name's initials;
- "partial": a shorter form of the one full name of its document that has it: a surname
  ("Berners-Lee" after "Tim Berners-Lee") joins the full name, and the full name joins the name
  without its middle names or initials ("Robert N. Bradbury" is written as "Robert Bradbury");
  it holds in that document only;
- "typed": the same name typed by an ontology class in one place and untyped in another;
- "stated": an LLM extractor read in the chunk that two names are one thing; the alias must
  appear in the chunk's text, an acronym must spell the name (then the rule is "acronym"),
  and the merge holds in its document only;
- "similar": a person's name and a longer form of it (middle names or initials added or spelled
  out) in two documents whose definitions agree: the embeddings of name + definition have a cosine
  of at least SIMILARITY, and the definitions give no years, or share one. Different generations
  ("Jr.") stay apart. The cosine is recorded as the merge's score, both definitions as its
  evidence, and the merge lasts while both do.
Guards: names typed by different classes are never one thing, an untyped name that two typed
things share stays apart, and a pair a person kept apart is never joined again.

This module is pure: `resolve` gets what the collection already holds as `Known` (the store
lookups live in extraction/resolver.py) and returns, per name, the IRI to write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from sparqlrag.extraction.knowledge import Entity, Knowledge
from sparqlrag.extraction.names import (
    defines,
    expansions,
    form_key,
    generation,
    initials_match,
    is_acronym,
    is_person,
    longer_form,
    name_key,
    personal_name,
    personal_words,
)

NORMALISED, ACRONYM, PARTIAL, TYPED, STATED, SIMILAR, CURATED = (
    "normalised",
    "acronym",
    "partial",
    "typed",
    "stated",
    "similar",
    "curated",
)
# the "similar" rule's cosine: chosen on made-up pairs, not the benchmark sets (bench/RESULTS.md)
SIMILARITY = 0.75
LOCAL_RULES = (PARTIAL, STATED)  # what holds in one document only
JOINT_RULES = (SIMILAR,)  # what needs all of its evidence (each side's definition), not just some


def completed(knowledge: Knowledge, text: str) -> Knowledge:
    """The chunk's knowledge with the expansions its text gives its acronyms added as entities
    (the offline extractor splits "National Aeronautics and Space Administration" at "and")."""
    named = {e.name for e in knowledge.entities}
    added = [
        Entity(e)
        for m in mentions_of(knowledge)
        if is_acronym(m.name)
        for e in expansions(text, m.name)
        if e not in named
    ]
    return replace(knowledge, entities=knowledge.entities + list(dict.fromkeys(added))) if added else knowledge


@dataclass(frozen=True)
class Mention:
    """A name as a document uses it: typed by an ontology class or not."""

    name: str
    type: str | None = None


@dataclass(frozen=True)
class Candidate:
    """An entity the collection holds under a name key: its IRI and label, and the canonical
    IRI it stands for (itself unless it is an alias) with that one's label and class. `held`:
    the store holds it (its IRI is published, a strong claim to stay canonical); else another
    document of the same batch names it."""

    iri: str
    label: str
    canonical: str
    canonical_label: str
    type: str | None
    held: bool = True
    defined_by: tuple[str, ...] = ()  # the chunks that give the definition a "similar" candidate was compared by


@dataclass
class Known:
    """What the collection holds, as resolution needs it: entities by name key (a person's
    merges among them), the longer or shorter forms of a person's name with the cosine of their
    embeddings (the "similar" rule's candidates; the batch's own names among them), and the pairs of name keys a
    person kept apart."""

    by_key: dict[str, list[Candidate]] = field(default_factory=dict)
    similar: dict[str, list[tuple[Candidate, float]]] = field(
        default_factory=dict
    )  # a name -> "similar" candidates, scored
    kept_apart: set[frozenset[str]] = field(default_factory=set)


@dataclass(frozen=True)
class Merge:
    """Evidence that `alias` (a name, and the IRI it gets on its own) names what `target` names
    (the next IRI on the way to the canonical one).
    `shared` merges hold collection-wide (other documents' names resolve through them, and they
    state owl:sameAs); a partial name's or an LLM's stated alias holds in its document only.
    `score` is the "similar" rule's cosine; the other rules are yes or no, and score 1.0."""

    alias: str
    alias_iri: str
    target: str
    rule: str
    score: float
    evidence: tuple[str, ...]  # chunk IRIs

    @property
    def shared(self) -> bool:
        return self.rule not in LOCAL_RULES


@dataclass
class Resolution:
    """One document's names resolved: the IRI to write for each mention, and the new merges."""

    iris: dict[Mention, str] = field(default_factory=dict)
    merges: list[Merge] = field(default_factory=list)
    roots: dict[str, str] = field(default_factory=dict)  # every IRI considered -> the canonical one
    classes: dict[str, str | None] = field(default_factory=dict)  # a canonical IRI -> its class
    names: dict[str, str] = field(default_factory=dict)  # a canonical IRI -> its name


@dataclass
class _Node:
    iri: str
    name: str
    type: str | None
    weight: int  # its claim to be the canonical one: 0 an acronym, 1 a name, 2 held by the store


def mentions_of(knowledge: Knowledge) -> list[Mention]:
    """The entity names a chunk's knowledge uses, typed as it types them."""
    types = {e.name: e.type for e in knowledge.entities}
    names = [e.name for e in knowledge.entities] + [alias for alias, _ in knowledge.aliases]
    for fact in knowledge.facts:
        names += [fact.subject, fact.object] if fact.object_entity else [fact.subject]
    return list(dict.fromkeys(Mention(n, types.get(n)) for n in names))


class _Clusters:
    """Union-find over IRIs that refuses what the guards forbid, keeping each join as an edge
    (its rule and evidence chunks; none for a link the store holds already)."""

    def __init__(self, known: Known) -> None:
        self.parent: dict[str, str] = {}
        self.nodes: dict[str, _Node] = {}
        self.edges: dict[str, dict[str, tuple[str, set[str], float]]] = {}
        self.known = known

    def add(self, node: _Node) -> None:
        held = self.nodes.get(node.iri)
        if held is None:
            self.nodes[node.iri], self.parent[node.iri] = node, node.iri
        else:
            held.weight, held.type = max(held.weight, node.weight), held.type or node.type

    def root(self, iri: str) -> str:
        while self.parent[iri] != iri:
            self.parent[iri] = self.parent[self.parent[iri]]
            iri = self.parent[iri]
        return iri

    def _members(self, root: str) -> list[_Node]:
        return [node for iri, node in self.nodes.items() if self.root(iri) == root]

    def _allowed(self, a: str, b: str) -> bool:
        left, right = self._members(a), self._members(b)
        if len({n.type for n in left + right if n.type}) > 1:
            return False
        keys = [(name_key(x.name), name_key(y.name)) for x in left for y in right]
        return not any(frozenset(pair) in self.known.kept_apart for pair in keys if pair[0] != pair[1])

    def join(self, alias: str, target: str, rule: str = "", evidence: Iterable[str] = (), score: float = 1.0) -> None:
        """Join alias to target; with a rule, the alias is recorded as joined by that evidence.
        Directional joins (the store's own merge, which has no rule: its canonical IRI is published
        and may be a person's choice; an acronym, a partial name, an untyped name) keep the
        target's root canonical unless only the alias's is typed; otherwise the stronger claim wins."""
        a, b = self.root(alias), self.root(target)
        if a != b:
            if not self._allowed(a, b):
                return
            typed_a, typed_b = self.nodes[a].type is not None, self.nodes[b].type is not None
            if rule in ("", ACRONYM, PARTIAL, TYPED) and not (typed_a and not typed_b):
                winner = b
            else:
                winner = a if self._claim(a) > self._claim(b) else b
            self.parent[a if winner == b else b] = winner
        if alias != target:
            for a, b in ((alias, target), (target, alias)):
                kept = self.edges.setdefault(a, {}).get(b)
                if kept is None or (rule and not kept[0]):
                    self.edges[a][b] = (rule, set(evidence), score)
                elif rule == kept[0]:
                    kept[1].update(evidence)

    def merges(self) -> list[Merge]:
        """Each IRI joined by evidence, as a merge into its neighbour on the way to its
        cluster's canonical IRI (so the rule shown is the one that joined those two names)."""
        found, seen = [], set()
        for root in sorted({self.root(iri) for iri in self.nodes}):
            queue = [root]
            seen.add(root)
            while queue:
                here = queue.pop(0)
                for there, (rule, evidence, score) in sorted(self.edges.get(here, {}).items()):
                    if there not in seen:
                        seen.add(there)
                        queue.append(there)
                        if rule and evidence:
                            found.append(
                                Merge(self.nodes[there].name, there, here, rule, score, tuple(sorted(evidence)))
                            )
        return found

    def _claim(self, root: str) -> tuple[bool, int, int, str]:
        """Typed beats untyped, then the stronger weight, then the longer name, then the IRI."""
        node = self.nodes[root]
        return (node.type is not None, node.weight, len(node.name), node.iri)


def resolve(
    chunks: list[tuple[str, str, Knowledge]], known: Known, mint: Callable[[Mention, str | None], str]
) -> Resolution:
    """One document's names: `chunks` are (chunk IRI, text, knowledge); `mint(mention, ontology)`
    is the IRI a mention gets on its own."""
    clusters = _Clusters(known)
    where: dict[Mention, set[str]] = {}
    iri_of: dict[Mention, str] = {}
    for chunk, _, knowledge in chunks:
        for mention in mentions_of(knowledge):
            where.setdefault(mention, set()).add(chunk)
            iri_of[mention] = mint(mention, knowledge.ontology)
            clusters.add(_Node(iri_of[mention], mention.name, mention.type, 0 if is_acronym(mention.name) else 1))
    for mention in iri_of:  # a "similar" candidate's claim to be canonical is known before the first join weighs one
        for candidate, _ in known.similar.get(mention.name, []):
            _nodes(clusters, candidate)
    _held(clusters, known, iri_of, where)
    _acronyms(clusters, chunks, iri_of)
    _stated(clusters, chunks, iri_of)
    _partials(clusters, iri_of, where)
    defined: dict[str, set[str]] = {}  # a name -> the chunks of this document that define it
    for chunk, _, knowledge in chunks:
        for entity in knowledge.entities:
            if entity.definition:
                defined.setdefault(entity.name, set()).add(chunk)
    _similar(clusters, known, iri_of, defined)
    resolution = Resolution({mention: clusters.root(iri) for mention, iri in iri_of.items()})
    resolution.roots = {iri: clusters.root(iri) for iri in clusters.nodes}
    resolution.classes = {root: clusters.nodes[root].type for root in set(resolution.roots.values())}
    resolution.names = {root: clusters.nodes[root].name for root in resolution.classes}
    resolution.merges = clusters.merges()
    return resolution


def _compatible(a: Mention, b: Mention | Candidate, classes: set[str]) -> str | None:
    """The rule that joins two uses of one name key: the same class (or none) is "normalised";
    an untyped use joins a typed one when the name has one class only. A one-word name and a
    common noun are not one ("Good", "goods"; "State", "states")."""
    other = b.name if isinstance(b, Mention) else b.label
    if " " not in a.name.strip() and " " not in other.strip() and a.name[:1].isupper() != other[:1].isupper():
        return None
    if a.type == b.type:
        return NORMALISED
    if (a.type is None or b.type is None) and len(classes) == 1:
        return TYPED
    return None


def _nodes(clusters: _Clusters, candidate: Candidate) -> None:
    """A candidate's IRI and its canonical one as nodes, with the claim the store's copy gives them."""
    weight = 2 if candidate.held else 1
    clusters.add(_Node(candidate.iri, candidate.label, None, weight))
    clusters.add(_Node(candidate.canonical, candidate.canonical_label, candidate.type, weight))


def _candidate(clusters: _Clusters, candidate: Candidate) -> None:
    """A candidate's nodes, joined as the store (or batch) has them."""
    _nodes(clusters, candidate)
    clusters.join(candidate.iri, candidate.canonical)  # (the store's own merge: no new evidence)


def _held(clusters: _Clusters, known: Known, iri_of: dict[Mention, str], where: dict[Mention, set[str]]) -> None:
    """Names that equal (by key) one another or what the collection holds."""
    by_key: dict[str, list[Mention]] = {}
    for mention in iri_of:
        by_key.setdefault(name_key(mention.name), []).append(mention)
    for key, mentions in by_key.items():
        held = known.by_key.get(key, [])
        classes = {c.type for c in held if c.type} | {m.type for m in mentions if m.type}
        for candidate in held:
            _candidate(clusters, candidate)
        for mention in mentions:
            for candidate in held:
                rule = _compatible(mention, candidate, classes)
                if rule is None:
                    continue
                if iri_of[mention] == candidate.iri:
                    clusters.join(candidate.iri, candidate.canonical)
                elif rule == TYPED and mention.type is None:  # the store typed it: nothing new to record
                    clusters.join(iri_of[mention], candidate.iri)
                elif rule == TYPED:
                    clusters.join(candidate.iri, iri_of[mention], TYPED, where[mention])
                else:
                    clusters.join(iri_of[mention], candidate.iri, NORMALISED, where[mention])
        for a, b in zip(mentions, mentions[1:]):
            rule = _compatible(a, b, classes)
            if rule == TYPED:
                untyped, typed = (a, b) if a.type is None else (b, a)
                clusters.join(iri_of[untyped], iri_of[typed], TYPED, where[typed])
            elif rule == NORMALISED:
                clusters.join(iri_of[b], iri_of[a], NORMALISED, where[b])


def _acronyms(clusters: _Clusters, chunks: list[tuple[str, str, Knowledge]], iri_of: dict[Mention, str]) -> None:
    for chunk, text, knowledge in chunks:
        names = mentions_of(knowledge)
        for short in (m for m in names if is_acronym(m.name)):
            for long in (m for m in names if m != short and initials_match(short.name, m.name)):
                if defines(text, short.name, long.name):
                    clusters.join(iri_of[short], iri_of[long], ACRONYM, [chunk])


def _stated(clusters: _Clusters, chunks: list[tuple[str, str, Knowledge]], iri_of: dict[Mention, str]) -> None:
    """An LLM's aliases, checked: the alias is one of the chunk's names and its text writes it."""
    for chunk, text, knowledge in chunks:
        names = {m.name: m for m in mentions_of(knowledge)}
        for alias, name in knowledge.aliases:
            if alias in names and name in names and alias in text and alias != name:
                if is_acronym(alias) and not initials_match(alias, name):
                    continue
                rule = ACRONYM if is_acronym(alias) else STATED
                clusters.join(iri_of[names[alias]], iri_of[names[name]], rule, [chunk])


def _partials(clusters: _Clusters, iri_of: dict[Mention, str], where: dict[Mention, set[str]]) -> None:
    """A shorter form of a person's full name, when the document has one full name it shortens:
    a surname ("Berners-Lee" after "Tim Berners-Lee"), or the name without its middle names or
    initials ("Robert N. Bradbury" ... "Robert Bradbury")."""
    _surnames(clusters, iri_of, where)
    _shorter_forms(clusters, iri_of, where)


def _surnames(clusters: _Clusters, iri_of: dict[Mention, str], where: dict[Mention, set[str]]) -> None:
    """A surname joins the one full name (two to four words) of its document that ends with it."""
    words = {m: m.name.split() for m in iri_of}
    for part in (m for m, w in words.items() if len(w) == 1 and not is_acronym(m.name) and personal_words(w)):
        wholes = {
            m.name: m
            for m, w in words.items()
            if 2 <= len(w) <= 4 and w[-1] == part.name and is_person(w) and part.type in (None, m.type)
        }
        if len(wholes) == 1:
            (whole,) = wholes.values()
            clusters.join(iri_of[part], iri_of[whole], PARTIAL, where[part])


def _shorter_forms(clusters: _Clusters, iri_of: dict[Mention, str], where: dict[Mention, set[str]]) -> None:
    """A full name takes the place of its one shorter form in the document ("Robert N. Bradbury"
    and "Robert Nelson Bradbury" are written as "Robert Bradbury"): other documents use the
    shorter form more often, and a merge in one document must not move its facts off the node
    they share. Not where the document names others of that last name ("Thomas E. Taylor",
    "John Taylor", "John H. Taylor"): relatives share names across generations."""
    by_form: dict[tuple[str, str], list[Mention]] = {}
    first_names: dict[str, set[str]] = {}  # last name -> the first names the document gives it ("Eustace" too)
    for mention in iri_of:
        words, _ = generation(mention.name.split())
        if len(words) >= 2 and personal_words(words):
            first, last = form_key(mention.name)
            first_names.setdefault(last, set()).add(first)
            if personal_name(mention.name):
                by_form.setdefault((first, last), []).append(mention)
    for (_, last), mentions in by_form.items():
        if len(first_names[last]) > 1:
            continue
        for part in mentions:
            longer = [m for m in mentions if longer_form(part.name, m.name) and part.type in (None, m.type)]
            longest = [m for m in longer if not any(longer_form(m.name, other.name) for other in longer)]
            if len({m.name for m in longest}) == 1:
                for whole in longer:
                    clusters.join(iri_of[whole], iri_of[part], PARTIAL, where[whole])


def _similar(clusters: _Clusters, known: Known, iri_of: dict[Mention, str], defined: dict[str, set[str]]) -> None:
    """A person's name and a longer form of it with agreeing definitions, as the pipeline found
    and scored them (Known.similar), where this document defines the name. Both definitions are
    the evidence, and a merge by this rule needs all of its evidence (pipeline `_removal`), so
    forgetting either document undoes it, whichever name is canonical."""
    for mention, iri in iri_of.items():
        for candidate, score in known.similar.get(mention.name, []) if mention.name in defined else []:
            if score >= SIMILARITY and candidate.iri != iri:  # (the guards refuse different classes)
                _candidate(clusters, candidate)
                clusters.join(
                    iri, candidate.iri, SIMILAR, defined[mention.name] | set(candidate.defined_by), round(score, 4)
                )
