"""Sentence splitting with nltk's Punkt, untrained: no data files to download."""

from __future__ import annotations

from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "inc", "ltd", "co", "corp", "vs", "no", "e.g",
                 "i.e", "etc", "u.s", "u.k", "a.d", "b.c", "ca", "approx", "gen", "gov", "sen", "rep", "mt", "ft",
                 "jan", "feb", "mar", "apr", "aug", "sept", "oct", "nov", "dec"}  # fmt: skip


def sentence_splitter() -> PunktSentenceTokenizer:
    """Punkt without training data, told the common abbreviations."""
    parameters = PunktParameters()
    parameters.abbrev_types = set(ABBREVIATIONS)
    return PunktSentenceTokenizer(parameters)
