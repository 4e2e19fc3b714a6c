"""Reading names: the text tests the resolution rules apply (resolution.py). Pure functions
of strings: keys, acronyms and their expansions, persons' names and their longer forms."""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from gender_guesser.detector import Detector

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


def defines(text: str, acronym: str, expansion: str) -> bool:
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


def expansions(text: str, acronym: str) -> list[str]:
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


@cache
def _given_names() -> Detector:
    return Detector(case_sensitive=False)


def personal_words(words: list[str]) -> bool:
    """Words that may be a person's name: capitalised words and initials, none a title or a
    word that names a kind of place or body ("King", "Gare", "University", "West")."""
    return all(_NAME_WORD.fullmatch(w) and w.rstrip(".").lower() not in _DESCRIPTORS for w in words)


def is_person(words: list[str]) -> bool:
    """A full name: personal words that start with a given name gender-guesser knows ("Tim
    Berners-Lee"), or with initials ("S. N. Mathur"); "Northern Ireland" and "Greater Sydney" are not."""
    first = words[:-1]
    initials = all(re.fullmatch(r"[A-Z]\.", w) for w in first)
    return personal_words(words) and (initials or _given_names().get_gender(first[0]) != "unknown")


def described(name: str, definition: str | None) -> str:
    """The text embedded for an entity with a definition (and compared by the "similar" rule)."""
    return f"{name}: {definition}" if definition else name


def generation(words: list[str]) -> tuple[list[str], str]:
    """A name's words without a generation suffix ("Jr.", "III"), and the suffix."""
    last = words[-1].rstrip(".,").lower() if words else ""
    return (words[:-1], last) if len(words) > 2 and last in _GENERATIONS else (words, "")


@cache
def personal_name(name: str) -> bool:
    """Two or more words that read as a person's full name (the names of "partial" forms and "similar")."""
    words, _ = generation(name.split())
    return len(words) >= 2 and is_person(words)


def form_key(name: str) -> tuple[str, str]:
    """A person's first and last name by key: what a name and its longer forms share."""
    words, _ = generation(name.split())
    return name_key(words[0]), name_key(words[-1])


def longer_form(short: str, long: str) -> bool:
    """Whether `long` is `short`, a person's name, with middle names or initials added or
    spelled out: the same first and last name and generation, and each middle word of `short`,
    in order, a middle word of `long` or its initial ("Robert N. Bradbury", "Robert Nelson Bradbury")."""
    (a, suffix_a), (b, suffix_b) = generation(short.split()), generation(long.split())
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
