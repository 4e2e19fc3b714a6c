"""Importing pre-extracted triples: the shared MuSiQue file, and malformed files."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sparqlrag.extraction.knowledge import Fact
from sparqlrag.extraction.triples_import import PreExtracted, TriplesFormatError, read_triples
from tests.conftest import SHARED

MUSIQUE = SHARED / "data" / "musique100" / "triples.jsonl"


def test_reads_the_shared_musique_triples() -> None:
    passages = read_triples(MUSIQUE)
    assert len(passages) == 1890
    assert sum(len(k.facts) for k in passages.values()) + sum(k.rejected for k in passages.values()) == 17234
    first = passages["mq0"]
    assert Fact("Journal of Mathematical Physics", "published by", "American Institute of Physics", True) in first.facts
    assert Fact("Journal of Mathematical Physics", "has impact factor of", "1.355 in 2018", False) in first.facts
    knowledge = asyncio.run(PreExtracted(passages).extract("ignored text", "mq0"))
    assert knowledge is first and asyncio.run(PreExtracted(passages).extract("x", "unknown")).facts == []


@pytest.mark.parametrize(
    "content,message",
    [
        ('{"passage_id": "a", "triples": []}\n{not json}\n', "line 2: not JSON"),
        ('["a", "b"]\n', "line 1: expected an object"),
        ('{"passage_id": "", "triples": []}\n', "line 1: 'passage_id' must be a non-empty string"),
        ('{"passage_id": "a", "triples": [["s", "p"]]}\n', "line 1: each triple must be"),
        ('{"passage_id": "a", "triples": "s p o"}\n', "line 1: 'triples' must be a list"),
        ('{"passage_id": "a", "entities": "x", "triples": []}\n', "line 1: 'entities' must be a list"),
        (
            '{"passage_id": "a", "triples": []}\n\n{"passage_id": "a", "triples": []}\n',
            "line 3: passage_id 'a' appears twice",
        ),
        ("\n\n", "holds no passages"),
    ],
)
def test_malformed_files_name_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "triples.jsonl"
    path.write_text(content)
    with pytest.raises(TriplesFormatError, match=message):
        read_triples(path)
