"""The offline extractor: entities and facts from plain text with no model download.

Sentences come from nltk's Punkt tokenizer (untrained, with a list of abbreviations) and
words from its Treebank tokenizer; neither needs data files. Then, per sentence:

- mentions: proper-name spans (capitalised words, joined by "of", "de", "van", ...), dates
  such as "January 1960", and numbers; a capitalised first word is a name only if the chunk
  never writes it in lower case;
- facts between neighbouring mentions: the words between them when they read as a verb
  phrase ("was born in", "published by", "from"), trimmed of articles and adverbs; when a
  clause starts with "and <verb>", its subject is the sentence's first name;
- "X is a Y" gives the fact (X, "is a", Y) and the sentence as X's definition;
- neighbouring names with no such phrase get a co-occurrence fact carrying the sentence, so
  Graph RAG can still walk from one to the other and show why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nltk.tokenize import TreebankWordTokenizer

from sparqlrag.extraction.knowledge import COOCCURS, Entity, Fact, Knowledge
from sparqlrag.models.sentences import sentence_splitter
from sparqlrag.threads import off_loop

CONNECTORS = set(
    """
    of de du des la le van von der den da di del bin al and for the &
    """.split()
)
FUNCTION_WORDS = set(
    """
    the a an it its in on at this that these those he she they we i you his her their our my after before during when
    while if as for from with by but and or there here since although however because some many most all each every both
    such what which who where why how no not one also then thus today yes under over between among through into of to so
    than other another several few any more less only even again once
    """.split()
)
HONORIFICS = {"dr.", "mr.", "mrs.", "ms.", "prof.", "dr", "mr", "mrs", "ms", "prof", "sir", "dame", "lord", "lady"}
MONTHS = set(
    """
    january february march april may june july august september october november december
    """.split()
)
ARTICLES = {"a", "an", "the"}
COPULAS = {"is", "was", "are", "were", "became", "becomes", "remains", "remained"}
VERBS = COPULAS | set(
    """
    be been being has have had won wrote made led leads took gave began begins held holds became born died founded
    located known named called owns owned runs ran built sold grew plays played joined left lost beat met said says
    includes include contains borders serves served elected married directed produced published released composed sang
    starred created developed lies lay flows belongs belonged moved lived lives studied taught do does did can could
    will would may might shall should must
    """.split()
)
AUXILIARIES = COPULAS | set(
    """
    be been being has have had will would can could may might shall should must do does did
    """.split()
)
PREPOSITIONS = {"in", "of", "from", "at", "on", "by", "for", "with", "to", "near", "into", "under", "within", "since"}
CLAUSE_BREAKS = {",", ";", ":", "(", ")", "--", "''", "``", '"'}
_NUMBER = re.compile(r"\d[\d,.]*%?")
_WORD = re.compile(r"\w", re.UNICODE)


@dataclass
class _Mention:
    start: int  # token index
    end: int  # token index, exclusive
    text: str
    is_name: bool


def _is_capitalised(token: str) -> bool:
    return token[:1].isupper() and bool(_WORD.search(token))


def _verbish(word: str) -> bool:
    return word in VERBS or (len(word) > 4 and "-" not in word and word.endswith(("ed", "ing")))


class OfflineExtractor:
    """Heuristic extraction in pure Python: fast (hundreds of chunks a second), no downloads."""

    name = "offline"
    llm_name = None

    def __init__(self) -> None:
        self._sentences = sentence_splitter()
        self._words = TreebankWordTokenizer()

    async def extract(self, text: str, document_id: str = "") -> Knowledge:
        return await off_loop(self.extract_sync, text)  # pure Python: keep it off the event loop

    def extract_sync(self, text: str) -> Knowledge:
        lowercase_words = {w for w in re.findall(r"\b[a-z]\w*\b", text)}
        entities: dict[str, Entity] = {}
        facts: dict[tuple[str, str, str], Fact] = {}
        for sentence in self._sentences.tokenize(text):
            sentence = " ".join(sentence.split())
            tokens = self._words.tokenize(sentence)
            mentions = self._mentions(tokens, lowercase_words)
            for mention in mentions:
                if mention.is_name and mention.text not in entities:
                    entities[mention.text] = Entity(mention.text)
            for fact in self._facts(tokens, mentions, sentence):
                facts.setdefault((fact.subject, fact.predicate, fact.object), fact)
                if fact.predicate in ("is a", "is an", "was a", "was an") and entities.get(fact.subject) is not None:
                    if entities[fact.subject].definition is None:
                        entities[fact.subject] = Entity(fact.subject, sentence)
        return Knowledge(list(entities.values()), list(facts.values()))

    def phrases(self, text: str) -> list[str]:
        """The names and values a question mentions (Graph RAG's offline concept extraction)."""
        lowercase_words = {w for w in re.findall(r"\b[a-z]\w*\b", text)}
        return [m.text for m in self._mentions(self._words.tokenize(text), lowercase_words)]

    # -- mentions ---------------------------------------------------------------------------

    def _mentions(self, tokens: list[str], lowercase_words: set[str]) -> list[_Mention]:
        mentions, index = [], 0
        while index < len(tokens):
            token = tokens[index]
            if _NUMBER.fullmatch(token):
                mentions.append(_Mention(index, index + 1, token, False))
                index += 1
                continue
            if not _is_capitalised(token) or self._sentence_initial_common(tokens, index, lowercase_words):
                index += 1
                continue
            end = index + 1
            while end < len(tokens):
                if _is_capitalised(tokens[end]) or tokens[end] == "&":
                    end += 1
                    continue
                ahead = end  # "University of Copenhagen", "Journal of the American ...": up to two connectors
                while ahead < len(tokens) and ahead - end < 2 and tokens[ahead].lower() in CONNECTORS - {"and"}:
                    ahead += 1
                if ahead == end or ahead >= len(tokens) or not _is_capitalised(tokens[ahead]):
                    break
                end = ahead
            while end - 1 > index and tokens[end - 1].lower() in CONNECTORS:
                end -= 1
            while end - index > 1 and tokens[index].lower() in HONORIFICS:
                index += 1  # "Dr. Jan P. Solovej" is named "Jan P. Solovej"
            is_date = tokens[index].lower() in MONTHS and end - index == 1
            if is_date and end < len(tokens) and _NUMBER.fullmatch(tokens[end]):
                end += 1  # "January 1960", "January 1, 1040"
                if end + 1 < len(tokens) and tokens[end] == "," and _NUMBER.fullmatch(tokens[end + 1]):
                    end += 2
            mentions.append(_Mention(index, end, _join(tokens[index:end]), not is_date))
            index = end
        return mentions

    @staticmethod
    def _sentence_initial_common(tokens: list[str], index: int, lowercase_words: set[str]) -> bool:
        """A capitalised first word is a name only if it is not a function word the text also writes in lower case."""
        word = tokens[index].lower()
        first = index == 0 or tokens[index - 1] in ("``", "(", '"', "'")
        return word in FUNCTION_WORDS or (first and word in lowercase_words and word not in MONTHS)

    # -- facts ------------------------------------------------------------------------------

    def _facts(self, tokens: list[str], mentions: list[_Mention], sentence: str) -> list[Fact]:
        facts: list[Fact] = []
        first_name = next((m for m in mentions if m.is_name), None)
        for left, right in zip(mentions, mentions[1:]):
            between = tokens[left.end : right.start]
            subject = left
            words = [w.lower() for w in between]
            if len(words) >= 2 and words[0] in ("and", "but") and _verbish(words[1]) and first_name is not None:
                subject, words = first_name, words[1:]
            if not subject.is_name:
                continue
            predicate = self._predicate(words)
            if predicate and not right.is_name and all(w in PREPOSITIONS for w in predicate.split()):
                continue  # "Paris in 1891" says when something happened, not a fact about Paris
            if predicate:
                facts.append(Fact(subject.text, predicate, right.text, right.is_name, sentence))
            elif right.is_name and subject is left:
                facts.append(Fact(left.text, COOCCURS, right.text, True, sentence))
        if first_name is not None:
            facts.extend(self._copula_fact(tokens, first_name, sentence))
        return facts

    @staticmethod
    def _predicate(words: list[str]) -> str | None:
        """The verb phrase linking two mentions, or None when the words between do not read as one."""
        if not words or any(w in CLAUSE_BREAKS for w in words):
            return None
        kept = [w for w in words if w not in ARTICLES and not (w.endswith("ly") and len(w) > 4) and _WORD.search(w)]
        if not kept:
            return None
        verbs = [i for i, w in enumerate(kept) if _verbish(w)]
        if not verbs:
            return " ".join(kept) if len(kept) <= 2 and all(w in PREPOSITIONS for w in kept) else None
        start = verbs[-1]  # "is a journal published by" -> "published by"
        if start > 0 and kept[start - 1] in AUXILIARIES:
            start -= 1  # but keep "was born in", "has won"
        phrase = kept[start:]
        return " ".join(phrase) if len(phrase) <= 4 else None

    @staticmethod
    def _copula_fact(tokens: list[str], subject: _Mention, sentence: str) -> list[Fact]:
        """X is a/an Y: Y as a literal class description, up to the next verb, preposition or break."""
        index = subject.end
        if (
            index + 2 >= len(tokens)
            or tokens[index].lower() not in COPULAS
            or tokens[index + 1].lower() not in ("a", "an")
        ):
            return []
        words: list[str] = []
        for token in tokens[index + 2 :]:
            lower = token.lower()
            if (
                lower in CLAUSE_BREAKS
                or lower in PREPOSITIONS
                or lower in (".", "and", "that", "which", "who")
                or (_verbish(lower) and words)
                or len(words) == 4
            ):
                break
            words.append(token)
        if not words:
            return []
        verb = f"{tokens[index].lower()} {tokens[index + 1].lower()}"
        predicate = {"are a": "is a", "were a": "was a"}.get(verb, verb)
        return [Fact(subject.text, predicate, _join(words), False, sentence)]


def _join(tokens: list[str]) -> str:
    """Tokens back to text: no space before punctuation and clitics."""
    text = " ".join(tokens)
    return re.sub(r" (?=[,.;:!?%)]|'s\b|n't\b)|(?<=[(]) ", "", text)
