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

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cache

from gender_guesser.detector import Detector

from sparqlrag.extraction.knowledge import Entity, Knowledge

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
_STOPWORDS = {"of", "the", "and", "for", "in", "on", "at", "to", "a", "an", "&", "de", "du", "la"}
_GENERATIONS = {"jr", "sr", "ii", "iii", "iv", "v", "vi"}
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_NAME_WORD = re.compile(r"[A-Z\u00c0-\u00de][\w'\u2019-]*\w|[A-Z]\.")  # "Berners-Lee", "O'Neill", "K."
_DESCRIPTORS = set(
    """
    king queen prince princess duke duchess earl count countess baron baroness lord lady sir dame saint st pope emperor
    empress sultan tsar czar shah president general captain admiral bishop archbishop cardinal father mother sister
    brother gare station university college school academy museum church cathedral abbey palace castle castel republic
    empire kingdom national royal holy north south east west new old great lake river mount mountain fort port airport
    park street road bridge conservatory institute company records club party council county city state province
    district member parliament house hotel hospital award prize cup league festival film band group team united
    international society association foundation press rio sierra santa san costa puerto porto monte mont cape manu
    upper lower
    """.split()
)


def name_key(name: str) -> str:
    """What the "normalised" rule compares: lower case, no diacritics or punctuation, no leading
    "the", the last word of a phrase or common noun without a plural -s ("The Academy Awards"
    and "academy award" share "academy award")."""
    text = unicodedata.normalize("NFKD", name).replace("%", " percent")  # 45% is not 45
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    words = re.findall(r"[^\W_]+", text)
    if len(words) > 1 and words[0] == "the":
        words = words[1:]
    plural = words and len(words[-1]) > 3 and words[-1].endswith("s") and not words[-1].endswith(("ss", "us", "is"))
    # a one-word name in capitals changes its referent with an -s ("Queens", "Indians", "BRICS"); a phrase does not
    if plural and (len(words) > 1 or name.strip()[:1].islower()):
        words[-1] = words[-1][:-3] + "y" if words[-1].endswith("ies") else words[-1][:-1]
    return " ".join(words)


def is_acronym(name: str) -> bool:
    """Two to ten letters and digits, at least two of them capitals, no spaces ("W3C", "CERN")."""
    return bool(re.fullmatch(r"[A-Za-z0-9&]{2,10}", name)) and sum(c.isupper() for c in name) >= 2


def _letters(acronym: str) -> str:
    """An acronym's letters with digit multipliers spelled out: "W3C" -> "wwwc"."""
    spelled = re.sub(r"([A-Za-z])(\d)", lambda m: m.group(1) * int(m.group(2)), acronym)
    return "".join(c for c in spelled.lower() if c.isalpha())


def initials_match(acronym: str, expansion: str) -> bool:
    """The acronym's letters are the initials of the expansion's words, with or without its
    small words ("World Wide Web Consortium": "wwwc"; "Organisation of ... Countries": "opec")."""
    words = re.findall(r"[^\W_]+", unicodedata.normalize("NFKD", expansion).lower())
    letters = _letters(acronym)
    every = "".join(w[0] for w in words)
    content = "".join(w[0] for w in words if w not in _STOPWORDS)
    return len(words) >= 2 and letters in (every, content)


def _defines(text: str, acronym: str, expansion: str) -> bool:
    """Whether the text says the acronym stands for the expansion, in one of the usual ways."""
    a, e = re.escape(acronym), r"\s+".join(map(re.escape, expansion.split()))  # a name may break across lines
    the = r"(?:the\s+)?"
    patterns = (
        rf"{e}\s*\(\s*{the}{a}\s*\)",  # World Wide Web Consortium (W3C)
        rf"\b{a}\s*\(\s*{the}{e}\s*\)",  # W3C (World Wide Web Consortium)
        rf"{e},?\s+(?:(?:is|was|are|were)\s+)?(?:also\s+|commonly\s+|often\s+|usually\s+)?(?:known|referred\s+to|abbreviated)"
        rf"\s+(?:to\s+as\s+|as\s+)?{the}{a}\b",  # ... is known as the W3C
        rf"{e},?\s+(?:also\s+)?called\s+{the}{a}\b",
        rf"\b{a}\s+(?:stands|stood)\s+for\s+{the}{e}",
    )
    return any(re.search(pattern, text, re.IGNORECASE) for pattern in patterns)


def _expansions(text: str, acronym: str) -> list[str]:
    """What the text defines the acronym as, found by its letters ("The National Aeronautics
    and Space Administration (NASA)": the shortest run of words before it, from a capitalised
    one, whose initials spell it), for when the extractor did not name the expansion itself."""
    a, most = re.escape(acronym), 2 * len(_letters(acronym)) + 2
    words = rf"((?:[^\W\d_][\w'-]*,?\s+){{1,{most}}})"
    before = [m.group(1) for m in re.finditer(rf"{words}\(\s*(?:the\s+)?{a}\s*\)", text)]  # ... Administration (NASA)
    before += [
        m.group(1)
        for m in re.finditer(
            rf"{words}(?:(?:is|was)\s+)?(?:also\s+)?(?:known|referred\s+to|abbreviated)"
            rf"\s+(?:to\s+as\s+|as\s+)?(?:the\s+)?{a}\b",
            text,
        )
    ]
    inside = [
        m.group(1) for m in re.finditer(rf"\b{a}\s*\(\s*(?:the\s+)?([^()]{{3,120}}?)\s*\)", text)
    ]  # NASA (National ...)
    found = [" ".join(w) for w in (run.replace(",", " ").split() for run in inside) if _spells(acronym, w)]
    for run in before:
        said = run.replace(",", " ").split()
        while said and said[-1].lower() in ("is", "was", "are", "were", "also", "commonly", "often", "usually"):
            said.pop()
        found += [" ".join(said[-size:]) for size in range(2, len(said) + 1) if _spells(acronym, said[-size:])][:1]
    return list(dict.fromkeys(found))


def _spells(acronym: str, words: list[str]) -> bool:
    return bool(words) and words[0][:1].isupper() and initials_match(acronym, " ".join(words))


def completed(knowledge: Knowledge, text: str) -> Knowledge:
    """The chunk's knowledge with the expansions its text gives its acronyms added as entities
    (the offline extractor splits "National Aeronautics and Space Administration" at "and")."""
    named = {e.name for e in knowledge.entities}
    added = [
        Entity(e)
        for m in mentions_of(knowledge)
        if is_acronym(m.name)
        for e in _expansions(text, m.name)
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
        Directional rules (an acronym, a partial name, an untyped name) keep the target's root
        canonical unless only the alias's is typed; otherwise the stronger claim wins."""
        a, b = self.root(alias), self.root(target)
        if a != b:
            if not self._allowed(a, b):
                return
            typed_a, typed_b = self.nodes[a].type is not None, self.nodes[b].type is not None
            if rule in (ACRONYM, PARTIAL, TYPED) and not (typed_a and not typed_b):
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
                if _defines(text, short.name, long.name):
                    clusters.join(iri_of[short], iri_of[long], ACRONYM, [chunk])


@cache
def _given_names() -> Detector:
    return Detector(case_sensitive=False)


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


def _personal(words: list[str]) -> bool:
    """Words that may be a person's name: capitalised words and initials, none a title or a
    word that names a kind of place or body ("King", "Gare", "University", "West")."""
    return all(_NAME_WORD.fullmatch(w) and w.rstrip(".").lower() not in _DESCRIPTORS for w in words)


def _person(words: list[str]) -> bool:
    """A full name: personal words that start with a given name gender-guesser knows ("Tim
    Berners-Lee"), or with initials ("S. N. Mathur"); "Northern Ireland" and "Greater Sydney" are not."""
    first = words[:-1]
    initials = all(re.fullmatch(r"[A-Z]\.", w) for w in first)
    return _personal(words) and (initials or _given_names().get_gender(first[0]) != "unknown")


def _partials(clusters: _Clusters, iri_of: dict[Mention, str], where: dict[Mention, set[str]]) -> None:
    """A shorter form of a person's full name, when the document has one full name it shortens:
    a surname ("Berners-Lee" after "Tim Berners-Lee"), or the name without its middle names or
    initials ("Robert N. Bradbury" ... "Robert Bradbury")."""
    _surnames(clusters, iri_of, where)
    _shorter_forms(clusters, iri_of, where)


def _surnames(clusters: _Clusters, iri_of: dict[Mention, str], where: dict[Mention, set[str]]) -> None:
    """A surname joins the one full name (two to four words) of its document that ends with it."""
    words = {m: m.name.split() for m in iri_of}
    for part in (m for m, w in words.items() if len(w) == 1 and not is_acronym(m.name) and _personal(w)):
        wholes = {
            m.name: m
            for m, w in words.items()
            if 2 <= len(w) <= 4 and w[-1] == part.name and _person(w) and part.type in (None, m.type)
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
        words, _ = _generation(mention.name.split())
        if len(words) >= 2 and _personal(words):
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


def described(name: str, definition: str | None) -> str:
    """The text embedded for an entity with a definition (and compared by the "similar" rule)."""
    return f"{name}: {definition}" if definition else name


def _generation(words: list[str]) -> tuple[list[str], str]:
    """A name's words without a generation suffix ("Jr.", "III"), and the suffix."""
    last = words[-1].rstrip(".,").lower() if words else ""
    return (words[:-1], last) if len(words) > 2 and last in _GENERATIONS else (words, "")


@cache
def personal_name(name: str) -> bool:
    """Two or more words that read as a person's full name (the names of "partial" forms and "similar")."""
    words, _ = _generation(name.split())
    return len(words) >= 2 and _person(words)


def form_key(name: str) -> tuple[str, str]:
    """A person's first and last name by key: what a name and its longer forms share."""
    words, _ = _generation(name.split())
    return name_key(words[0]), name_key(words[-1])


def longer_form(short: str, long: str) -> bool:
    """Whether `long` is `short`, a person's name, with middle names or initials added or
    spelled out: the same first and last name and generation, and each middle word of `short`,
    in order, a middle word of `long` or its initial ("Robert N. Bradbury", "Robert Nelson Bradbury")."""
    (a, suffix_a), (b, suffix_b) = _generation(short.split()), _generation(long.split())
    if suffix_a != suffix_b or len(a) > len(b) or not (personal_name(short) and personal_name(long)):
        return False
    key = [name_key(w) for w in a], [name_key(w) for w in b]
    if key[0][0] != key[1][0] or key[0][-1] != key[1][-1] or key[0] == key[1]:
        return False
    middle = iter(key[1][1:-1])
    return all(
        any(word == there or (len(word) == 1 and there.startswith(word)) for there in middle) for word in key[0][1:-1]
    )


def compared(a: str, a_definition: str | None, b: str, b_definition: str | None) -> tuple[str, str] | None:
    """The texts whose embeddings the "similar" rule compares for two names, or None when they
    cannot be one thing by it: one of them has no definition (a common name alone says too little:
    "Anne Rice" the novelist, "Anne Estelle Rice" the painter), neither is a longer form of the
    other, or their definitions give years and share none ("born 1901", "born 1850")."""
    if not (a_definition and b_definition) or not (longer_form(a, b) or longer_form(b, a)):
        return None
    years = set(_YEAR.findall(a_definition)), set(_YEAR.findall(b_definition))
    if years[0] and years[1] and not years[0] & years[1]:
        return None
    return described(a, a_definition), described(b, b_definition)


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
