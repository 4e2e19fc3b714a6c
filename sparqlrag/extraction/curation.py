"""A person's corrections to entity resolution: join two things, split an alias off one, and
list a thing's aliases with the evidence for each.

A decision is a reifier in the source graph with `sr:rule "curated"` and `dcterms:created`,
derived from no chunk, so forgetting documents never removes it: a curated `owl:sameAs`
resolves the alias's name collection-wide like any shared merge, and a curated
`owl:differentFrom` keeps two names apart in every later automatic run. The documents a
decision affects are written again from their kept extractions at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyoxigraph import Literal, NamedNode, Quad, Triple

from sparqlrag.extraction import resolver
from sparqlrag.extraction.curation_refusals import CurationRefused, UnknownEntity
from sparqlrag.extraction.names import name_key
from sparqlrag.extraction.pipeline import Pipeline
from sparqlrag.extraction.provenance import time_literal
from sparqlrag.extraction.resolution import CURATED
from sparqlrag.library.librarian import UnknownCollection, collection_exists
from sparqlrag.store import vocab
from sparqlrag.store.aliases import chain
from sparqlrag.store.base import QuadStore
from sparqlrag.store.select import select
from sparqlrag.store.sparql_text import insert_data, sparql_term, values
from sparqlrag.store.vocab import Iris
from sparqlrag.threads import off_loop


@dataclass(frozen=True)
class AliasInfo:
    name: str
    documents: list[str]  # the documents that use the name for the thing


@dataclass(frozen=True)
class MergeInfo:
    alias: str
    iri: str
    rule: str
    score: float
    documents: list[str]  # the documents that gave the evidence (none for a person's decision)


@dataclass
class EntityAliases:
    entity: str
    label: str | None
    aliases: list[AliasInfo] = field(default_factory=list)
    merges: list[MergeInfo] = field(default_factory=list)
    kept_apart: list[str] = field(default_factory=list)  # names a person split off


class Curation:
    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline

    @property
    def store(self) -> QuadStore:
        return self.pipeline.store

    async def _update(self, *operations: str) -> None:
        await off_loop(self.store.update, vocab.SPARQL_PREFIXES + " ;\n".join(operations))

    async def _exists(self, iris: Iris) -> None:
        if not await off_loop(collection_exists, self.store, iris):
            raise UnknownCollection(iris.collection)

    def _find(self, iris: Iris, entity: str) -> str:
        """The canonical IRI of an entity given by IRI or by name (a name two things share is refused)."""
        kg = sparql_term(iris.knowledge_graph)
        if entity.startswith(iris.entity("").value):
            try:
                node = NamedNode(entity)
            except ValueError:  # not an IRI at all ("…/id/c/a b>"): no entity has it
                raise UnknownEntity(f"collection {iris.collection!r} has no entity {entity!r}") from None
            rows = select(
                self.store,
                vocab.SPARQL_PREFIXES
                + f"""SELECT DISTINCT ?canonical WHERE {{ GRAPH {kg} {{
                {chain(iris, sparql_term(node), "?canonical")} FILTER EXISTS {{ ?canonical ?p ?o }} }} }}""",
            )
            canonicals = {row["canonical"] for row in rows}
        else:
            known = resolver.known(self.store, iris, {name_key(entity)})
            canonicals = {c.canonical for c in known.by_key.get(name_key(entity), [])}
        if not canonicals:
            raise UnknownEntity(f"collection {iris.collection!r} has no entity {entity!r}")
        if len(canonicals) > 1:
            raise CurationRefused(
                f"{entity!r} names {len(canonicals)} things in {iris.collection!r}; give one IRI: "
                + ", ".join(sorted(canonicals))
            )
        return canonicals.pop()

    def _label(self, iris: Iris, entity: str) -> str | None:
        rows = select(
            self.store,
            vocab.SPARQL_PREFIXES
            + f"""SELECT ?label WHERE {{ GRAPH {sparql_term(iris.knowledge_graph)} {{
            {sparql_term(NamedNode(entity))} rdfs:label ?label }} }} ORDER BY ?label LIMIT 1""",
        )
        return rows[0]["label"] if rows else None

    def _classes(self, iris: Iris, entity: str) -> set[str]:
        rows = select(
            self.store,
            f"SELECT ?c WHERE {{ GRAPH {sparql_term(iris.knowledge_graph)} {{ {sparql_term(NamedNode(entity))} a ?c "
            f"}} }}",
        )
        return {row["c"] for row in rows}

    def _decision(self, iris: Iris, triple: Triple, alias: str) -> list[Quad]:
        """The decision as its own reifier of the triple, beside any reifier of evidence for it."""
        statement, source = iris.decision(triple), iris.source_graph
        now = time_literal(datetime.now(UTC))
        return [
            Quad(triple.subject, triple.predicate, triple.object, iris.knowledge_graph),
            Quad(statement, vocab.RDF_REIFIES, triple, source),
            Quad(statement, vocab.SR_RULE, Literal(CURATED), source),
            Quad(statement, vocab.SR_SCORE, Literal(1.0), source),
            Quad(statement, vocab.SR_ALIAS, Literal(alias), source),
            Quad(statement, vocab.SR_KEY, Literal(name_key(alias)), source),
            Quad(statement, vocab.DCTERMS_CREATED, now, source),
        ]

    def _retract(self, iris: Iris, predicate: NamedNode, subjects: list[str], objects: list[str]) -> str:
        """Delete `s predicate o` (any of the subjects to any of the objects) with its reifier."""
        kg, src = sparql_term(iris.knowledge_graph), sparql_term(iris.source_graph)
        return (
            f"DELETE {{ GRAPH {kg} {{ ?s {sparql_term(predicate)} ?o }} GRAPH {src} {{ ?st ?x ?y }} }} WHERE {{ "
            f"{values('s', map(NamedNode, subjects))} {values('o', map(NamedNode, objects))} GRAPH {kg} {{ ?s "
            f"{sparql_term(predicate)} ?o }} "
            f"OPTIONAL {{ GRAPH {src} {{ ?st rdf:reifies <<( ?s {sparql_term(predicate)} ?o )>> ; ?x ?y }} }} }}"
        )

    async def merge(self, iris: Iris, entity: str, other: str) -> EntityAliases:
        """`other` is `entity`: its IRI becomes an alias of entity's (owl:sameAs), its names
        aliases, and the documents that said things about it now say them about `entity`."""
        await self._exists(iris)
        target, alias = (
            await off_loop(self._find, iris, entity),
            await off_loop(self._find, iris, other),
        )
        if target == alias:
            raise CurationRefused(f"{entity!r} and {other!r} are one thing already: {target}")
        classes = await off_loop(self._classes, iris, target) | await off_loop(self._classes, iris, alias)
        if len(classes) > 1:
            raise CurationRefused(
                f"{entity!r} and {other!r} are typed by different classes ({', '.join(sorted(classes))}); "
                "one thing has one class here"
            )
        name = await off_loop(self._label, iris, alias) or other
        quads = self._decision(iris, Triple(NamedNode(alias), vocab.OWL_SAME_AS, NamedNode(target)), name)
        retract = self._retract(iris, vocab.OWL_DIFFERENT_FROM, [alias, target], [alias, target])
        await self._update(retract, insert_data(quads))
        affected = await off_loop(resolver.documents_using, self.store, iris, {alias})
        await self.pipeline.resolve_again(iris, affected)
        return await off_loop(self._aliases, iris, target)

    async def split(self, iris: Iris, entity: str, alias: str) -> EntityAliases:
        """`alias` names something else than `entity`: its merges into entity are undone, a
        curated owl:differentFrom keeps them apart, and the documents that used the name are
        written again (the name becomes its own thing)."""
        await self._exists(iris)
        target = await off_loop(self._find, iris, entity)
        before = await off_loop(self._aliases, iris, target)
        key = name_key(alias)
        merged = [m.iri for m in before.merges if name_key(m.alias) == key]
        if not merged and not any(name_key(a.name) == key for a in before.aliases):
            raise UnknownEntity(f"{alias!r} is not an alias of {target}")
        own = iris.entity(alias).value
        members = await off_loop(self._cluster, iris, target)
        quads = self._decision(iris, Triple(NamedNode(own), vocab.OWL_DIFFERENT_FROM, NamedNode(target)), alias)
        await self._update(self._retract(iris, vocab.OWL_SAME_AS, merged + [own], members), insert_data(quads))
        affected = await off_loop(resolver.documents_naming, self.store, iris, {key}, set())
        await self.pipeline.resolve_again(iris, affected)
        return await off_loop(self._aliases, iris, target)

    def _cluster(self, iris: Iris, canonical: str) -> list[str]:
        """The canonical IRI and every IRI whose owl:sameAs chain ends at it."""
        rows = select(
            self.store,
            vocab.SPARQL_PREFIXES
            + f"""SELECT DISTINCT ?e WHERE {{ GRAPH {sparql_term(iris.knowledge_graph)} {{
            ?e owl:sameAs+ {sparql_term(NamedNode(canonical))} }} }}""",
        )
        return [canonical, *(row["e"] for row in rows)]

    async def aliases(self, iris: Iris, entity: str) -> EntityAliases:
        """The thing's names other than its own, the merges that joined IRIs to it (rule, score,
        the documents of the evidence), and the names a person split off it."""
        await self._exists(iris)
        canonical = await off_loop(self._find, iris, entity)
        return await off_loop(self._aliases, iris, canonical)

    def _aliases(self, iris: Iris, canonical: str) -> EntityAliases:
        kg, src, node = (
            sparql_term(iris.knowledge_graph),
            sparql_term(iris.source_graph),
            sparql_term(NamedNode(canonical)),
        )
        result = EntityAliases(canonical, self._label(iris, canonical))
        names = select(
            self.store,
            vocab.SPARQL_PREFIXES
            + f"""SELECT ?name (GROUP_CONCAT(DISTINCT STR(?doc); separator=" ") AS ?docs)
            WHERE {{ GRAPH {kg} {{ {node} skos:altLabel ?name }} OPTIONAL {{ GRAPH {src} {{
              ?st rdf:reifies <<( {node} skos:altLabel ?name )>> ; prov:wasDerivedFrom ?chunk . ?chunk
                prov:wasDerivedFrom ?doc }} }}
            }} GROUP BY ?name ORDER BY ?name""",
        )
        result.aliases = [AliasInfo(row["name"], self._documents(iris, row.get("docs", ""))) for row in names]
        merges = select(
            self.store,
            vocab.SPARQL_PREFIXES
            + f"""SELECT ?a ?alias ?rule (MAX(?s) AS ?score)
            (GROUP_CONCAT(DISTINCT STR(?doc); separator=" ") AS ?docs) WHERE {{
            GRAPH {kg} {{ ?b owl:sameAs* {node} }}
            GRAPH {src} {{ ?m rdf:reifies <<( ?a owl:sameAs ?b )>> ; sr:rule ?rule ; sr:score ?s ; sr:alias ?alias
              OPTIONAL {{ ?m prov:wasDerivedFrom ?chunk . ?chunk prov:wasDerivedFrom ?doc }} }}
            }} GROUP BY ?a ?alias ?rule ORDER BY ?alias ?rule""",
        )
        result.merges = [
            MergeInfo(
                row["alias"], row["a"], row["rule"], float(row["score"]), self._documents(iris, row.get("docs", ""))
            )
            for row in merges
        ]
        apart = select(
            self.store,
            vocab.SPARQL_PREFIXES
            + f"""SELECT DISTINCT ?alias WHERE {{ GRAPH {src} {{
            ?d sr:rule "curated" ; sr:alias ?alias ; rdf:reifies <<( ?x owl:differentFrom {node} )>> }} }} ORDER BY
              ?alias""",
        )
        result.kept_apart = [row["alias"] for row in apart]
        return result

    @staticmethod
    def _documents(iris: Iris, joined: str) -> list[str]:
        prefix = iris.document("").value
        return sorted({iris.document_id(doc) for doc in joined.split() if doc.startswith(prefix)})
