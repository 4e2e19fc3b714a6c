"""The graph index: HippoRAG 2's graph of passages and entities, derived from the store.

Nodes are a collection's passages (chunks) and the entities its walked facts name. The edges are
the reference code's (OSU-NLP-Group/HippoRAG, `add_fact_edges`, `add_passage_edges`,
`add_synonymy_edges`), in an undirected graph:
- fact: a fact's two entities, weighted by how many (passage, fact) statements join them, counted
  once in each direction as the reference counts them (a fact no passage states counts once);
- passage: a passage and each entity of a fact it states, weight 1;
- synonym: an entity and another whose name vector is at cosine >= 0.8 (among its nearest 101,
  names with more than two letters or digits), weight the cosine, once per direction found.

The rows are a mirror of the facts' provenance (`mentions`: chunk, statement, its two ends) plus
every chunk indexed (`passages`) and the synonym pairs, in one SQLite file in the data directory.
They are written with the other index rows (before the store commits, taken back and swept as
they are: extraction/indexing.py), rebuilt from the store by `rebuild`, and dropped with the
collection. Synonyms are computed for the entities a write adds, against the entities already
in the graph, so a write never rebuilds the graph; the igraph Graph a question runs on is read
from the rows on the first question after a change.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import igraph
import numpy as np
from pyoxigraph import NamedNode, Triple

from sparqlrag.store import vocab
from sparqlrag.store.base import QuadStore
from sparqlrag.store.facts import walked, walked_filter
from sparqlrag.store.select import lexical, select_terms
from sparqlrag.store.sparql_text import sparql_term
from sparqlrag.store.vector_index import VectorIndex
from sparqlrag.store.vocab import Iris

SYNONYM_THRESHOLD = 0.8  # HippoRAG's synonymy_edge_sim_threshold
SYNONYM_NEIGHBOURS = 101  # the reference stops past 100 neighbours of a node
SYNONYM_BATCH = 512  # entities whose neighbours are searched at once
NO_CHUNK = ""  # the chunk of a fact no passage states (a graph loaded rather than ingested)
PARAMETERS = 500  # values in one `IN (...)`

SCHEMA = """
CREATE TABLE IF NOT EXISTS passages (
  collection TEXT NOT NULL, chunk TEXT NOT NULL, PRIMARY KEY (collection, chunk)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mentions (
  collection TEXT NOT NULL, chunk TEXT NOT NULL, statement TEXT NOT NULL, subject TEXT, object TEXT,
  PRIMARY KEY (collection, chunk, statement)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mentions_of_statement ON mentions (collection, statement);
CREATE INDEX IF NOT EXISTS mentions_of_subject ON mentions (collection, subject);
CREATE INDEX IF NOT EXISTS mentions_of_object ON mentions (collection, object);
CREATE TABLE IF NOT EXISTS synonyms (
  collection TEXT NOT NULL, a TEXT NOT NULL, b TEXT NOT NULL, score REAL NOT NULL,
  PRIMARY KEY (collection, a, b)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS synonyms_of_b ON synonyms (collection, b);
"""


class Mention(NamedTuple):
    """A fact as a passage states it: the chunk (NO_CHUNK for none), the fact's reifier, and its
    ends that are entities (None for a literal)."""

    chunk: str
    statement: str
    subject: str | None
    object: str | None


def mentions_of(iris: Iris, chunk: str, triples: Iterable[Triple]) -> list[Mention]:
    """The mentions of the walked facts among `triples` that `chunk` states."""
    return [
        Mention(chunk, iris.statement(t).value, _entity(t.subject), _entity(t.object)) for t in triples if walked(t)
    ]


def _entity(term: object) -> str | None:
    return term.value if isinstance(term, NamedNode) else None


def _named(label: str) -> bool:
    """Whether a name is long enough to have synonyms (the reference's rule)."""
    return len(re.sub("[^A-Za-z0-9]", "", label)) > 2


def _pieces(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), PARAMETERS):
        yield items[start : start + PARAMETERS]


@dataclass(frozen=True)
class GraphView:
    """A collection's graph as one question reads it: vertices are passages then entities."""

    graph: igraph.Graph
    names: list[str]  # each vertex's IRI
    vertex: dict[str, int]
    passages: int  # vertices [0, passages) are passages
    in_passages: np.ndarray  # per vertex: how many passages name it (entities; 0 for passages)

    @property
    def empty(self) -> bool:
        edges: int = self.graph.ecount()
        return edges == 0


class GraphIndex:
    """Thread-safe; every write of a collection invalidates its cached view."""

    def __init__(self, store: QuadStore, vectors: VectorIndex, path: Path | None = None) -> None:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self.store, self.vectors = store, vectors
        self._db = sqlite3.connect(":memory:" if path is None else str(path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.RLock()
        self._versions: dict[str, int] = {}
        self._views: dict[str, tuple[int, GraphView]] = {}

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- writes -----------------------------------------------------------------------------

    def write(self, collection: str, chunks: Sequence[str], mentions: Sequence[Mention]) -> None:
        """`chunks` indexed (again) whole: their mentions become `mentions` (which may also
        hold facts of NO_CHUNK, kept only for statements no passage states); then synonyms for
        the entities this adds to the graph."""
        with self._lock, self._db:
            before = self._present(collection, self._ends(mentions))
            gone = self._delete(collection, "chunk", list(chunks))
            self._db.executemany(
                "INSERT OR IGNORE INTO passages VALUES (?, ?)", [(collection, c) for c in chunks if c != NO_CHUNK]
            )
            stated = [m for m in mentions if m.chunk != NO_CHUNK]
            # a fact a passage now states is no longer one no passage states
            self._delete_rows(collection, "statement", sorted({m.statement for m in stated}), unstated_only=True)
            self._db.executemany(
                "INSERT OR REPLACE INTO mentions VALUES (?, ?, ?, ?, ?)", [(collection, *m) for m in stated]
            )
            unstated = [m for m in mentions if m.chunk == NO_CHUNK]
            held = self._held_statements(collection, [m.statement for m in unstated])
            self._db.executemany(
                "INSERT OR IGNORE INTO mentions VALUES (?, ?, ?, ?, ?)",
                [(collection, *m) for m in unstated if m.statement not in held],
            )
            self._forget_synonyms(collection, gone - self._present(collection, gone))
            self._add_synonyms(collection, sorted(self._ends(mentions) - before))
            self._changed(collection)

    def remove_chunks(self, collection: str, chunks: Sequence[str]) -> None:
        """The passages and what they state, gone (and synonyms of entities left in none)."""
        with self._lock, self._db:
            self._delete_rows(collection, "chunk", list(chunks), table="passages")
            named = self._delete(collection, "chunk", list(chunks))
            self._forget_synonyms(collection, named - self._present(collection, named))
            self._changed(collection)

    def remove_statements(self, collection: str, statements: Sequence[str]) -> None:
        """Facts gone from the store: their mentions in every passage."""
        with self._lock, self._db:
            named = self._delete(collection, "statement", list(statements))
            self._forget_synonyms(collection, named - self._present(collection, named))
            self._changed(collection)

    def drop(self, collection: str) -> None:
        with self._lock, self._db:
            for table in ("passages", "mentions", "synonyms"):
                self._db.execute(f"DELETE FROM {table} WHERE collection = ?", (collection,))
            self._changed(collection)

    def rebuild(self, iris: Iris) -> None:
        """The collection's rows again from the store alone: the chunks of its ready documents,
        the provenance of its walked facts, then synonyms among all their entities."""
        src, kg = sparql_term(iris.source_graph), sparql_term(iris.knowledge_graph)
        chunk_rows = select_terms(
            self.store,
            vocab.SPARQL_PREFIXES
            + f"""SELECT ?chunk WHERE {{ GRAPH {src} {{ ?chunk a sr:Chunk ; prov:wasDerivedFrom ?doc .
              ?doc sr:status "{vocab.READY}" }} }}""",
        )
        stated = select_terms(
            self.store,
            vocab.SPARQL_PREFIXES
            + f"""SELECT ?s ?p ?o ?chunk WHERE {{ GRAPH {kg} {{ ?s ?p ?o }} FILTER({walked_filter()})
              OPTIONAL {{ GRAPH {src} {{ ?st rdf:reifies <<( ?s ?p ?o )>> ; prov:wasDerivedFrom ?chunk .
                ?chunk a sr:Chunk ; prov:wasDerivedFrom ?doc . ?doc sr:status "{vocab.READY}" }} }} }}""",
        )
        mentions = []
        for row in stated:
            fact = Triple(row["s"], row["p"], row["o"])  # type: ignore[arg-type]
            chunk = lexical(row["chunk"]) if "chunk" in row else NO_CHUNK
            mentions += mentions_of(iris, chunk, [fact])
        with self._lock:
            self.drop(iris.collection)
            self.write(iris.collection, sorted({lexical(row["chunk"]) for row in chunk_rows}), mentions)

    # -- reads ------------------------------------------------------------------------------

    def chunks(self, collection: str) -> set[str]:
        """Every chunk with rows (passages, or mentions)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT chunk FROM passages WHERE collection = ? UNION SELECT chunk FROM mentions WHERE collection = ?",
                (collection, collection),
            )
            return {row[0] for row in rows} - {NO_CHUNK}

    def statements(self, collection: str) -> set[str]:
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT statement FROM mentions WHERE collection = ?", (collection,))
            return {row[0] for row in rows}

    def rows(self, collection: str) -> tuple[list[tuple[str, ...]], ...]:
        """Every row of the collection, sorted (to compare an index with a rebuild)."""
        with self._lock:
            return tuple(
                sorted(self._db.execute(f"SELECT * FROM {table} WHERE collection = ?", (collection,)).fetchall())
                for table in ("passages", "mentions", "synonyms")
            )

    def mentions_in(self, collection: str, chunks: Sequence[str]) -> list[Mention]:
        with self._lock:
            return [
                Mention(*row[1:])
                for part in _pieces(list(chunks))
                for row in self._db.execute(
                    f"SELECT * FROM mentions WHERE collection = ? AND chunk IN ({','.join('?' * len(part))})",
                    (collection, *part),
                )
            ]

    def view(self, collection: str) -> GraphView:
        """The collection's graph, read from the rows once per change. A collection without
        passages (a graph loaded, not ingested) gives an empty view: PageRank has nothing to rank."""
        with self._lock:
            version = self._versions.get(collection, 0)
            cached = self._views.get(collection)
            if cached is not None and cached[0] == version:
                return cached[1]
            view = self._read(collection)
            self._views[collection] = (version, view)
            return view

    # -- inside ------------------------------------------------------------------------------

    def _read(self, collection: str) -> GraphView:
        db = self._db
        passages = [row[0] for row in db.execute("SELECT chunk FROM passages WHERE collection = ?", (collection,))]
        if not passages:
            return GraphView(igraph.Graph(), [], {}, 0, np.zeros(0, dtype=np.int64))
        names = list(passages)
        vertex = {name: i for i, name in enumerate(names)}

        def at(name: str) -> int:
            if name not in vertex:
                vertex[name] = len(names)
                names.append(name)
            return vertex[name]

        edges: list[tuple[int, int]] = []
        weights: list[float] = []
        facts = db.execute(
            "SELECT min(subject, object), max(subject, object), count(*) FROM mentions WHERE collection = ? "
            "AND subject IS NOT NULL AND object IS NOT NULL AND subject != object "
            "GROUP BY min(subject, object), max(subject, object)",
            (collection,),
        )
        for a, b, count in facts:
            edges.append((at(a), at(b)))
            weights.append(2.0 * count)
        contained = db.execute(
            "SELECT chunk, subject FROM mentions WHERE collection = ? AND chunk != '' AND subject IS NOT NULL "
            "UNION SELECT chunk, object FROM mentions WHERE collection = ? AND chunk != '' AND object IS NOT NULL",
            (collection, collection),
        )
        in_passages: dict[int, int] = {}
        for chunk, entity in contained:
            if chunk in vertex:
                node = at(entity)
                edges.append((vertex[chunk], node))
                weights.append(1.0)
                in_passages[node] = in_passages.get(node, 0) + 1
        for a, b, score in db.execute("SELECT a, b, score FROM synonyms WHERE collection = ?", (collection,)):
            edges.append((at(a), at(b)))
            weights.append(score)
        graph = igraph.Graph(n=len(names), edges=edges, directed=False, edge_attrs={"weight": weights})
        counts = np.zeros(len(names), dtype=np.int64)
        for node, count in in_passages.items():
            counts[node] = count
        return GraphView(graph, names, vertex, len(passages), counts)

    def _changed(self, collection: str) -> None:
        self._versions[collection] = self._versions.get(collection, 0) + 1

    @staticmethod
    def _ends(mentions: Iterable[Mention]) -> set[str]:
        return {end for m in mentions for end in (m.subject, m.object) if end is not None}

    def _present(self, collection: str, entities: Iterable[str]) -> set[str]:
        """Which of `entities` some mention names."""
        found: set[str] = set()
        for part in _pieces(sorted(entities)):
            marks = ",".join("?" * len(part))
            for column in ("subject", "object"):
                rows = self._db.execute(
                    f"SELECT DISTINCT {column} FROM mentions WHERE collection = ? AND {column} IN ({marks})",
                    (collection, *part),
                )
                found |= {row[0] for row in rows}
        return found

    def _held_statements(self, collection: str, statements: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for part in _pieces(sorted(set(statements))):
            rows = self._db.execute(
                f"SELECT statement FROM mentions WHERE collection = ? AND statement IN ({','.join('?' * len(part))})",
                (collection, *part),
            )
            found |= {row[0] for row in rows}
        return found

    def _delete(self, collection: str, column: str, values: Sequence[str]) -> set[str]:
        """Delete the mentions whose `column` is one of `values`; returns the entities they named."""
        named: set[str] = set()
        for part in _pieces(values):
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"DELETE FROM mentions WHERE collection = ? AND {column} IN ({marks}) RETURNING subject, object",
                (collection, *part),
            )
            named |= {end for row in rows for end in row if end is not None}
        return named

    def _delete_rows(
        self, collection: str, column: str, values: Sequence[str], table: str = "mentions", unstated_only: bool = False
    ) -> None:
        """Delete the rows of `table` whose `column` is one of `values` (of mentions, only those
        of NO_CHUNK when `unstated_only`)."""
        only = " AND chunk = ''" if unstated_only else ""
        for part in _pieces(values):
            self._db.execute(
                f"DELETE FROM {table} WHERE collection = ?{only} AND {column} IN ({','.join('?' * len(part))})",
                (collection, *part),
            )

    def _forget_synonyms(self, collection: str, entities: set[str]) -> None:
        for column in ("a", "b"):
            self._delete_rows(collection, column, sorted(entities), table="synonyms")

    def _add_synonyms(self, collection: str, entities: list[str]) -> None:
        """Synonym rows between each of `entities` and the graph's entities: each way in which
        the name that has the neighbour is long enough (as the reference builds them). Asked
        SYNONYM_BATCH entities at a time, so that a whole graph's (a rebuild) stays small."""
        vectors = self.vectors.vectors_of(collection, "entities", entities)
        asking = [e for e in entities if e in vectors]
        rows: set[tuple[str, str, str, float]] = set()
        for start in range(0, len(asking), SYNONYM_BATCH):
            part = asking[start : start + SYNONYM_BATCH]
            # the best facet's score bounds the name's: what is below the threshold is no synonym
            near = self.vectors.search_many(
                collection, "entities", np.stack([vectors[e] for e in part]), 2 * SYNONYM_NEIGHBOURS, SYNONYM_THRESHOLD
            )
            names = {h.iri: str(h.payload.get("label") or "") for hits in near for h in hits}
            own = self.vectors.vectors_of(  # the names' own vectors (not their definitions')
                collection, "entities", sorted(self._present(collection, names))
            )
            for entity, hits in zip(part, near):
                scored = [(h.iri, float(own[h.iri] @ vectors[entity])) for h in hits if h.iri in own]
                scored = [pair for pair in scored if pair[0] != entity]
                scored = sorted((p for p in scored if p[1] >= SYNONYM_THRESHOLD and names[p[0]]), key=lambda p: -p[1])
                for other, score in scored[:SYNONYM_NEIGHBOURS]:
                    if _named(names.get(entity, "")):
                        rows.add((collection, entity, other, score))
                    if _named(names[other]):
                        rows.add((collection, other, entity, score))
        self._db.executemany("INSERT OR REPLACE INTO synonyms VALUES (?, ?, ?, ?)", sorted(rows))
