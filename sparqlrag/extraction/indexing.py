"""The derived indexes of what the store holds: chunk vectors and keyword rows, entity
vectors, fact vectors. Rows are keyed by IRI, so writing one twice is harmless; retrieval
trusts only chunks the store knows."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pyoxigraph import Literal, NamedNode, Triple

from sparqlrag.extraction.extractions import Extractions
from sparqlrag.extraction.names import described
from sparqlrag.extraction.plans import Plan, Progress
from sparqlrag.extraction.provenance import ChunkRecord, knowledge_triples
from sparqlrag.library import librarian
from sparqlrag.models.embedder import Embedder
from sparqlrag.store import vocab
from sparqlrag.store.base import QuadStore
from sparqlrag.store.fact_index import FactIndex
from sparqlrag.store.facts import walked, walked_filter
from sparqlrag.store.graph_index import GraphIndex, mentions_of
from sparqlrag.store.keyword_index import KeywordIndex
from sparqlrag.store.select import lexical, select, select_terms, select_values
from sparqlrag.store.sparql_text import sparql_term
from sparqlrag.store.vector_index import Facet, VectorIndex, alias_facet
from sparqlrag.store.vocab import Iris
from sparqlrag.threads import off_loop

CHUNKS = "GRAPH %s { ?c a sr:Chunk }"  # (of a collection's source graph)
NAMED = f"GRAPH %s {{ ?e {vocab.NAME_PATH}|owl:sameAs ?x }}"  # what has an entity vector (in its knowledge graph)


@dataclass
class Indexed:
    """What an `index` call wrote, or was about to: what to take back if the store never
    holds it (the commit failed, or the process was killed before it)."""

    chunks: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    facts: list[Triple] = field(default_factory=list)


class Indexer:
    def __init__(
        self,
        *,
        store: QuadStore,
        vectors: VectorIndex,
        keywords: KeywordIndex,
        graph: GraphIndex,
        facts: FactIndex,
        embedder: Embedder,
        extractions: Extractions,
    ) -> None:
        self.store, self.vectors, self.keywords, self.embedder = store, vectors, keywords, embedder
        self.graph, self.facts = graph, facts
        self.extractions = extractions

    async def index(self, iris: Iris, chunks: list[ChunkRecord], plans: list[Plan], indexed: Indexed) -> None:
        """Chunk vectors and keyword rows; vectors of the entities those chunks name that the
        index does not hold yet (an entity's IRI comes from its name, so a known one is unchanged):
        one of its label, and one of its label with its definition when it has one; one of each
        alias IRI a shared merge states, with the alias's name (a question that says "W3C"
        grounds there, and the walk goes on from the canonical IRI); and vectors of the facts
        they state that the fact index does not hold yet; the chunks' rows in the graph index.
        `indexed` records each write before it is made (see take_back)."""
        collection = iris.collection
        indexed.chunks += [c.iri.value for c in chunks]
        if chunks:
            # a chunk's IRI names its text, so a vector held already is the right one (documents written again)
            embedded = await off_loop(self.vectors.existing, collection, "chunks", [c.iri.value for c in chunks])
            new = [c for c in chunks if c.iri.value not in embedded]
            if new:
                vectors = await off_loop(self.embedder.embed, [c.text for c in new])
                payloads = [{"document": c.document.value, "text": c.text} for c in new]
                await off_loop(self.vectors.upsert, collection, "chunks", [c.iri.value for c in new], vectors, payloads)
            await off_loop(self.keywords.add, collection, [(c.iri.value, c.text) for c in chunks])
        stated = [
            (chunk.iri.value, [triple for triple, _ in knowledge_triples(iris, result, plan.resolution)])
            for plan in plans
            for chunk, (result, _, _) in zip(plan.added, plan.knowledge)
        ]
        triples = [triple for _, some in stated for triple in some]
        labels = {
            lexical(t.subject): lexical(t.object) for t in triples if t.predicate == vocab.RDFS_LABEL
        }  # not in the store yet
        definitions = {lexical(t.subject): lexical(t.object) for t in triples if t.predicate == vocab.SKOS_DEFINITION}
        entities = iris.entity("").value
        named = {iri: (label, definitions.get(iri)) for iri, label in labels.items() if iri.startswith(entities)}
        named |= {m.alias_iri: (m.alias, None) for plan in plans for m in plan.resolution.merges if m.shared}
        indexed.entities += named
        indexed.facts += triples
        await self._entities(collection, named)
        await off_loop(self.facts.add, iris, triples, labels)
        mentions = [mention for chunk, some in stated for mention in mentions_of(iris, chunk, some)]
        await off_loop(self.graph.write, collection, [c.iri.value for c in chunks], mentions)

    async def _entities(self, collection: str, entities: dict[str, tuple[str, str | None]]) -> int:
        """Vectors for the entities (IRI -> label, definition) the index does not hold yet: one
        of the label, and one of the label with the definition when there is one. Returns how
        many vectors were written."""
        defined = [iri for iri, (_, definition) in entities.items() if definition]
        known = await off_loop(self.vectors.existing, collection, "entities", list(entities))
        known_defined = await off_loop(self.vectors.existing, collection, "entities", defined, "definition")
        labels = [iri for iri in entities if iri not in known]
        defined_new = [iri for iri in defined if iri not in known_defined]
        texts = [entities[iri][0] for iri in labels] + [described(*entities[iri]) for iri in defined_new]
        if texts:
            vectors = await off_loop(self.embedder.embed, texts)
            parts: list[tuple[list[str], np.ndarray, Facet]] = [
                (labels, vectors[: len(labels)], ""),
                (defined_new, vectors[len(labels) :], "definition"),
            ]
            for iri_list, rows, facet in parts:
                if iri_list:
                    payloads = [{"label": entities[iri][0], "definition": entities[iri][1]} for iri in iri_list]
                    await off_loop(self.vectors.upsert, collection, "entities", iri_list, rows, payloads, facet)
        return len(texts)

    async def index_graph(
        self, iris: Iris, *, batch: int = 5000, on_progress: Progress | None = None, minted_only: bool = False
    ) -> tuple[int, int]:
        """Index what the collection's knowledge graph holds without vectors: its labelled
        entities (predicates, IRIs used as one, left out), then its walked facts. For a graph
        loaded with SPARQL or `sparqlrag load` rather than ingested, so that Graph RAG can ground
        questions on it and score its facts. `minted_only`: only the entities ingest mints (under
        the collection's id/ namespace), as ingest indexes them. Returns how many entity and fact
        vectors were written."""
        if not await off_loop(librarian.collection_exists, self.store, iris):
            raise librarian.UnknownCollection(iris.collection)
        kg = sparql_term(iris.knowledge_graph)
        minted = f" FILTER(STRSTARTS(STR(?e), {sparql_term(Literal(iris.entity('').value))}))" if minted_only else ""
        rows = await off_loop(
            select,
            self.store,
            vocab.SPARQL_PREFIXES
            + f"""
            SELECT ?e ?l ?name_rank (SAMPLE(?d) AS ?definition) WHERE {{ GRAPH {kg} {{
              {vocab.named_by("?e", "?l")} OPTIONAL {{ ?e skos:definition ?d }} FILTER(isIRI(?e)){minted}
              FILTER NOT EXISTS {{ ?x ?e ?y }} }} }} GROUP BY ?e ?l ?name_rank""",
        )
        labels = vocab.preferred(rows, "e", "l")
        definitions = {row["e"]: row["definition"] for row in rows if row.get("definition")}
        names: dict[str, set[str]] = {}  # each entity's names but its label: other names, as altLabels are
        for row in rows:
            if row["l"] != labels[row["e"]]:
                names.setdefault(row["e"], set()).add(row["l"])
        facts = await off_loop(
            select_terms,
            self.store,
            f"""SELECT ?s ?p ?o WHERE {{ GRAPH {kg} {{ ?s ?p ?o }}
            FILTER({walked_filter()}) }}""",
        )
        entities = fact_vectors = 0
        named = list(labels)
        total = len(named) + len(facts)
        for start in range(0, len(named), batch):
            part = {e: (labels[e], definitions.get(e)) for e in named[start : start + batch]}
            entities += await self._entities(iris.collection, part)
            if on_progress is not None:
                on_progress(min(start + batch, len(named)), total)
        if not minted_only:  # ingest's own names are resolved, not read back (extraction/resolution.py)
            entities += await self._other_names(iris, labels, names)
        for start in range(0, len(facts), batch):
            triples = [Triple(row["s"], row["p"], row["o"]) for row in facts[start : start + batch]]  # type: ignore[arg-type]
            fact_vectors += len(await off_loop(self.facts.add, iris, triples))
            if on_progress is not None:
                on_progress(len(named) + min(start + batch, len(facts)), total)
        await off_loop(self.graph.rebuild, iris)
        return entities, fact_vectors

    async def _other_names(self, iris: Iris, labels: dict[str, str], names: dict[str, set[str]]) -> int:
        """A point for each other name a loaded graph gives one of its named entities (IRI ->
        label): its `skos:altLabel`s and the `names` its other name predicates give, each with
        that name's facet: the graph's own words for the thing, so no name rule is applied to
        someone else's graph. Returns the points written."""
        rows = await off_loop(
            select,
            self.store,
            vocab.SPARQL_PREFIXES
            + f"""SELECT DISTINCT ?e ?name WHERE {{ GRAPH {sparql_term(iris.knowledge_graph)} {{
              ?e skos:altLabel ?name FILTER(isIRI(?e) && isLiteral(?name)) }} }}""",
        )
        other = {(row["e"], row["name"]) for row in rows} | {(e, name) for e, more in names.items() for name in more}
        by_facet: dict[str, list[tuple[str, str]]] = {}
        for e, name in sorted(other):
            if e in labels and name != labels[e]:
                by_facet.setdefault(alias_facet(name), []).append((e, name))
        new: dict[str, list[tuple[str, str]]] = {}
        for facet, named in by_facet.items():
            known = await off_loop(self.vectors.existing, iris.collection, "entities", [e for e, _ in named], facet)
            if unknown := [(e, name) for e, name in named if e not in known]:
                new[facet] = unknown
        if not new:
            return 0
        words = [named[0][1] for named in new.values()]  # a facet is one name
        vectors = await off_loop(self.embedder.embed, words)
        for (facet, named), vector in zip(new.items(), vectors):
            payloads = [{"label": labels[e], "alias": name} for e, name in named]
            repeated = np.repeat(vector[None, :], len(named), axis=0)
            entities = [e for e, _ in named]
            await off_loop(self.vectors.upsert, iris.collection, "entities", entities, repeated, payloads, facet)
        return sum(len(named) for named in new.values())

    async def reindex(self, iris: Iris, *, batch: int = 256, on_progress: Progress | None = None) -> int:
        """Rebuild the collection's derived indexes from the store alone, the system of record:
        what they held is dropped; the chunks of its ready documents get their vectors and keyword
        rows again, then its entities (labelled ones, and the alias IRIs its shared merges state,
        as ingest indexes them) and its walked facts (index_graph). Returns the vectors written."""
        if not await off_loop(librarian.collection_exists, self.store, iris):
            raise librarian.UnknownCollection(iris.collection)
        await off_loop(self.vectors.drop, iris.collection)
        await off_loop(self.keywords.drop, iris.collection)
        await off_loop(self.graph.drop, iris.collection)
        src, kg = sparql_term(iris.source_graph), sparql_term(iris.knowledge_graph)
        chunks = await off_loop(
            select,
            self.store,
            vocab.SPARQL_PREFIXES
            + f"""SELECT ?chunk ?text ?document WHERE {{ GRAPH {src} {{ ?chunk a sr:Chunk ; sr:text ?text ;
              prov:wasDerivedFrom ?document . ?document sr:status "{vocab.READY}" }} }} ORDER BY ?chunk""",
        )
        aliases = await off_loop(
            select,
            self.store,
            vocab.SPARQL_PREFIXES
            + f"""SELECT ?alias (SAMPLE(?name) AS ?label) WHERE {{ GRAPH {kg} {{ ?alias owl:sameAs ?entity }}
              GRAPH {src} {{ ?merge rdf:reifies <<( ?alias owl:sameAs ?entity )>> ; sr:alias ?name }} }}
              GROUP BY ?alias""",
        )
        for start in range(0, len(chunks), batch):
            rows = chunks[start : start + batch]
            vectors = await off_loop(self.embedder.embed, [row["text"] for row in rows])
            payloads = [{"document": row["document"], "text": row["text"]} for row in rows]
            await off_loop(
                self.vectors.upsert, iris.collection, "chunks", [row["chunk"] for row in rows], vectors, payloads
            )
            await off_loop(self.keywords.add, iris.collection, [(row["chunk"], row["text"]) for row in rows])
            if on_progress is not None:
                on_progress(start + len(rows), len(chunks))
        written = len(chunks) + await self._entities(
            iris.collection, {row["alias"]: (row["label"], None) for row in aliases}
        )
        entities, facts = await self.index_graph(iris, on_progress=on_progress, minted_only=True)
        return written + entities + facts

    async def build_missing_graphs(self, collections: list[Iris]) -> list[str]:
        """Graph index rows for the collections an older version indexed without them (their
        keyword rows exist, their graph rows do not): rebuilt from the store, once. Returns their names."""
        built = []
        for iris in collections:
            name = iris.collection
            if await off_loop(self.keywords.count, name) and not await off_loop(self.graph.chunks, name):
                await off_loop(self.graph.rebuild, iris)
                built.append(name)
        return built

    async def unindexed(self, collections: list[Iris]) -> dict[str, int]:
        """The collections whose store holds chunks (how many) that these indexes have no row of:
        another data directory indexed them (a second process on one remote store), or the
        indexes were lost. Only `reindex` makes them answer."""
        found = {}
        for iris in collections:
            if await off_loop(self.keywords.count, iris.collection):
                continue
            src = sparql_term(iris.source_graph)
            rows = await off_loop(
                select, self.store, vocab.SPARQL_PREFIXES + f"SELECT (COUNT(*) AS ?n) WHERE {{ {CHUNKS % src} }}"
            )
            held = int(rows[0]["n"]) if rows else 0
            if held:
                found[iris.collection] = held
        return found

    async def take_back(self, iris: Iris, indexed: Indexed) -> int:
        """Remove the rows `indexed` recorded whose subject the store does not hold: chunks it
        has not, entities its knowledge graph does not name, facts it does not state. Kept
        extractions stay (a retry reuses them). Returns how many IRIs lost their rows."""
        src, kg = sparql_term(iris.source_graph), sparql_term(iris.knowledge_graph)
        chunks = set(indexed.chunks) - await self._held("c", indexed.chunks, CHUNKS % src)
        named = await self._held("e", indexed.entities, NAMED % kg)
        statements = sorted({iris.statement(t).value for t in indexed.facts})  # a fact's reifier is its statement
        reified = await self._held("r", statements, f"GRAPH {src} {{ ?r rdf:reifies ?t }}")
        entities, facts = set(indexed.entities) - named, set(statements) - reified
        await self._drop(iris.collection, chunks, entities, facts)
        return len(chunks) + len(entities) + len(facts)

    async def sweep(self, iris: Iris) -> int:
        """Remove every index row of the collection whose subject the store does not hold: what a
        process killed between indexing and its commit left. Run before anything else writes
        (server start, CLI ingest): a batch indexed but not yet committed would look the same.
        Returns how many IRIs lost their rows."""
        src, kg = sparql_term(iris.source_graph), sparql_term(iris.knowledge_graph)
        indexed_chunks = await off_loop(self.vectors.iris, iris.collection, "chunks")
        indexed_chunks |= await off_loop(self.keywords.iris, iris.collection)
        indexed_chunks |= await off_loop(self.graph.chunks, iris.collection)
        chunks = await self._held("c", None, CHUNKS % src)
        named = await self._held("e", None, NAMED % kg)
        facts = await off_loop(
            select_terms, self.store, f"SELECT ?s ?p ?o WHERE {{ GRAPH {kg} {{ ?s ?p ?o }} FILTER({walked_filter()}) }}"
        )
        triples = (Triple(r["s"], r["p"], r["o"]) for r in facts)  # type: ignore[arg-type]
        stated = {iris.statement(t).value for t in triples if walked(t)}
        gone = (
            indexed_chunks - chunks,
            await off_loop(self.vectors.iris, iris.collection, "entities") - named,
            (
                await off_loop(self.vectors.iris, iris.collection, "facts")
                | await off_loop(self.graph.statements, iris.collection)
            )
            - stated,
        )
        await self._drop(iris.collection, *gone)
        return sum(len(part) for part in gone)

    async def _drop(self, collection: str, chunks: set[str], entities: set[str], facts: set[str]) -> None:
        if chunks:
            await off_loop(self.vectors.delete, collection, "chunks", sorted(chunks))
            await off_loop(self.keywords.delete, collection, sorted(chunks))
            await off_loop(self.graph.remove_chunks, collection, sorted(chunks))
        if entities:
            await off_loop(self.vectors.delete, collection, "entities", sorted(entities))
        if facts:
            await off_loop(self.vectors.delete, collection, "facts", sorted(facts))
            await off_loop(self.graph.remove_statements, collection, sorted(facts))

    async def _held(self, variable: str, terms: list[str] | None, pattern: str) -> set[str]:
        """The IRIs (of `terms`, or all) that the SPARQL `pattern`, naming ?`variable`, matches."""
        query = vocab.SPARQL_PREFIXES + f"SELECT DISTINCT ?{variable} WHERE {{ %s {pattern} }}"
        if terms is None:
            rows = await off_loop(select, self.store, query % "")
        else:
            rows = await off_loop(
                select_values, self.store, variable, map(NamedNode, terms), lambda asked: query % asked
            )
        return {row[variable] for row in rows}

    async def forget(
        self, iris: Iris, chunks: list[str], entities: set[str], statements: list[str], merges: dict[str, str]
    ) -> tuple[set[str], set[str]]:
        """Index rows of removed chunks, vectors of entities that lost their last label, and of
        the facts among `statements` whose reifier is gone (the fact went with it). Returns the
        keys of the `merges` (reifier -> alias key, among `statements`) that went, and the
        entities left with no name of their own: what resolution must look at again."""
        gone: set[str] = set()
        if statements:
            rows = await off_loop(
                select_values,
                self.store,
                "st",
                map(NamedNode, statements),
                lambda asked: (
                    vocab.SPARQL_PREFIXES
                    + f"""
                SELECT ?st WHERE {{ {asked} FILTER NOT EXISTS {{
                  GRAPH {sparql_term(iris.source_graph)} {{ ?st rdf:reifies <<( ?s ?p ?o )>> }} }} }}"""
                ),
            )
            gone = {row["st"] for row in rows}
            await off_loop(self.facts.remove, iris, sorted(gone))
            await off_loop(self.graph.remove_statements, iris.collection, sorted(gone))
        lost = {key for statement, key in merges.items() if statement in gone}
        if chunks:
            await off_loop(self.vectors.delete, iris.collection, "chunks", chunks)
            await off_loop(self.keywords.delete, iris.collection, chunks)
            await off_loop(self.graph.remove_chunks, iris.collection, chunks)
            await off_loop(self.extractions.discard, iris.collection, chunks)
        if entities:
            rows = await off_loop(
                select_values,
                self.store,
                "entity",
                map(NamedNode, sorted(entities)),
                lambda asked: (
                    vocab.SPARQL_PREFIXES
                    + f"""
                SELECT ?entity WHERE {{ {asked}
                  FILTER NOT EXISTS {{ GRAPH {sparql_term(iris.knowledge_graph)} {{ ?entity
                    {vocab.NAME_PATH}|owl:sameAs ?kept }} }} }}"""
                ),
            )
            await off_loop(self.vectors.delete, iris.collection, "entities", [row["entity"] for row in rows])
            return lost, {row["entity"] for row in rows}
        return lost, set()
