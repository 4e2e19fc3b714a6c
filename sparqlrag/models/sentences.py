"""Sentence splitting with nltk's Punkt, untrained: no data files to download.

A sentence never spans a paragraph break, and a Markdown heading is a sentence of its own
(without its `#` marks): Punkt alone would run "# Title" into the paragraph below it.
"""

from __future__ import annotations

import re

from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

ABBREVIATIONS = set(
    """
    mr mrs ms dr prof st jr sr inc ltd co corp vs no e.g i.e etc u.s u.k a.d b.c ca approx gen gov sen rep mt ft jan feb
    mar apr aug sept oct nov dec
    """.split()
)
_BLOCKS = re.compile(r"\n\s*\n")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


class SentenceSplitter:
    def __init__(self) -> None:
        parameters = PunktParameters()
        parameters.abbrev_types = set(ABBREVIATIONS)
        self._punkt = PunktSentenceTokenizer(parameters)

    def tokenize(self, text: str) -> list[str]:
        sentences: list[str] = []
        for block in _BLOCKS.split(_HEADING.sub(lambda m: f"\n\n{m.group(1)}\n\n", text)):
            if block.strip():
                sentences += self._punkt.tokenize(block.strip())
        return sentences


def sentence_splitter() -> SentenceSplitter:
    """Punkt without training data, told the common abbreviations, paragraph- and heading-aware."""
    return SentenceSplitter()
