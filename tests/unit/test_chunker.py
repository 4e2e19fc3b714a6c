"""Chunking: sizes, overlap, offsets and fallbacks."""

from __future__ import annotations

import pytest

from sparqlrag.extraction.chunker import split


def test_split_respects_size_overlap_and_offsets() -> None:
    paragraphs = [" ".join(f"p{p}w{w}" for w in range(60)) for p in range(12)]  # ~ 330-char paragraphs
    text = "\n\n".join(paragraphs)
    chunks = split(text, size=1000, overlap=100)
    assert len(chunks) > 3
    for chunk in chunks:
        assert len(chunk.text) <= 1000
        assert text[chunk.offset : chunk.offset + len(chunk.text)] == chunk.text
    covered = "".join(text[c.offset : c.offset + len(c.text)] for c in chunks)
    assert all(p in covered for p in paragraphs)  # nothing lost
    for before, after in zip(chunks, chunks[1:]):
        assert after.offset <= before.offset + len(before.text) + 2  # contiguous (but for "\n\n") or overlapping


def test_split_falls_back_to_words_and_characters() -> None:
    one_line = " ".join(f"w{i}" for i in range(500))
    word_chunks = split(one_line, size=200, overlap=20)
    assert all(len(c.text) <= 200 for c in word_chunks)
    for before, after in zip(word_chunks, word_chunks[1:]):  # words are small: chunks repeat a few
        repeated = before.offset + len(before.text) - after.offset
        assert 0 < repeated <= 20
    no_spaces = "x" * 950
    chunks = split(no_spaces, size=300, overlap=0)
    assert [len(c.text) for c in chunks] == [300, 300, 300, 50]
    assert split("short text", size=2000, overlap=100)[0].text == "short text"
    assert split("   ", size=10, overlap=0) == []
    with pytest.raises(ValueError, match="overlap"):
        split("x", size=10, overlap=10)
