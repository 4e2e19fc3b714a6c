"""BM25 keyword search over chunk text: SQLite FTS5, one table per collection, one file.

Client text never reaches FTS5's query language unescaped: queries are split into words and
each word is quoted, then OR-ed, so `bm25()` ranks by how many and how rare the words are.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from sparqlrag.store.vocab import check_collection

_WORDS = re.compile(r"\w+", re.UNICODE)
STOPWORDS = frozenset(
    "a an and are as at be by for from has he in is it its of on or that the to was were will with "
    "who what which when where why how did does do".split()
)


@dataclass(frozen=True)
class KeywordHit:
    iri: str
    score: float  # higher is better (negated bm25)


class KeywordIndex:
    def __init__(self, path: Path | None = None) -> None:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(":memory:" if path is None else str(path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._lock = threading.Lock()
        self._tables: set[str] = set()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @staticmethod
    def _table(collection: str) -> str:
        return f'"chunks_{check_collection(collection).replace("-", "_")}"'

    def _ensure(self, collection: str) -> str:
        table = self._table(collection)
        if table not in self._tables:  # once per collection, not on every search
            self._db.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5(iri UNINDEXED, text, tokenize='porter "
                f"unicode61')"
            )
            self._tables.add(table)
        return table

    def add(self, collection: str, rows: Sequence[tuple[str, str]]) -> None:
        """(iri, text) rows, replacing earlier rows of the same IRIs, in one transaction."""
        with self._lock, self._db:
            table = self._ensure(collection)
            self._db.executemany(f"DELETE FROM {table} WHERE iri = ?", [(iri,) for iri, _ in rows])
            self._db.executemany(f"INSERT INTO {table} (iri, text) VALUES (?, ?)", rows)

    def delete(self, collection: str, iris: Sequence[str]) -> None:
        with self._lock, self._db:
            table = self._ensure(collection)
            self._db.executemany(f"DELETE FROM {table} WHERE iri = ?", [(iri,) for iri in iris])

    def iris(self, collection: str) -> set[str]:
        """Every IRI with a row."""
        with self._lock:
            return {row[0] for row in self._db.execute(f"SELECT iri FROM {self._ensure(collection)}")}

    def search(
        self, collection: str, query: str, limit: int, within: Collection[str] | None = None
    ) -> list[KeywordHit]:
        """The `limit` best rows by BM25; `within`: of those IRIs alone (one JSON parameter)."""
        words = [w for w in _WORDS.findall(query.lower()) if w not in STOPWORDS] or _WORDS.findall(query.lower())
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in dict.fromkeys(words))
        with self._lock:
            table = self._ensure(collection)
            scoped = "" if within is None else "AND iri IN (SELECT value FROM json_each(?))"
            rows = self._db.execute(
                f"SELECT iri, bm25({table}) FROM {table} WHERE {table} MATCH ? {scoped} ORDER BY bm25({table}) LIMIT ?",
                (match, limit) if within is None else (match, json.dumps(list(within)), limit),
            ).fetchall()
        return [KeywordHit(iri, -score) for iri, score in rows]

    def count(self, collection: str) -> int:
        with self._lock:
            count: int = self._db.execute(f"SELECT count(*) FROM {self._ensure(collection)}").fetchone()[0]
            return count

    def drop(self, collection: str) -> None:
        with self._lock, self._db:
            self._db.execute(f"DROP TABLE IF EXISTS {self._table(collection)}")
            self._tables.discard(self._table(collection))
