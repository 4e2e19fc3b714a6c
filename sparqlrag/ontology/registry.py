"""Loaded ontologies: each in its own named graph (named by the ontology IRI), registered by a
short name in the server's registry graph (`vocab.registry_graph`, which no collection-limited
token can write), and read by owlready2 into an `OntologyModel`.

Loading checks everything before it writes (readable, has classes, no clash of name or IRI),
then replaces the ontology's graph and registration in one update, so a reload of a changed
file replaces the old one whole and a rejected file changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from pyoxigraph import Literal, NamedNode, Quad, RdfFormat, Triple, parse

from sparqlrag.ontology.owl import OWL_ONTOLOGY, OntologyError, OntologyModel, ontology_iri, owlready
from sparqlrag.ontology.reading import read_with_prefixes
from sparqlrag.store import vocab
from sparqlrag.store.base import QuadStore
from sparqlrag.store.select import select, select_terms
from sparqlrag.store.sparql_text import insert_data, move_data, sparql_term
from sparqlrag.store.vocab import check_name
from sparqlrag.threads import off_loop

log = logging.getLogger(__name__)
XSD_DATETIME = NamedNode(vocab.XSD + "dateTime")
RDF_JSON = NamedNode(vocab.RDF + "JSON")


class UnknownOntology(LookupError):
    def __init__(self, name: str) -> None:
        super().__init__(f"no ontology is loaded under the name {name!r}")


class OntologyConflict(Exception):
    """The name or the IRI is taken by another ontology."""


@dataclass(frozen=True)
class OntologyInfo:
    name: str
    iri: str  # also the name of its graph
    classes: int
    properties: int
    triples: int
    sha256: str
    loaded: str
    prefixes: dict[str, str] = field(default_factory=dict, compare=False)  # the file's, to serve it with

    def json(self) -> dict[str, Any]:
        return {name: value for name, value in asdict(self).items() if name != "prefixes"} | {"graph": self.iri}


@dataclass(frozen=True)
class LoadResult:
    info: OntologyInfo
    replaced: bool  # a changed ontology of that name was there before
    unchanged: bool  # the same file was loaded already: nothing written
    warnings: list[str]


def _prefixes(value: str | None) -> dict[str, str]:
    prefixes = json.loads(value or "{}")
    if not isinstance(prefixes, dict) or not all(isinstance(v, str) for v in prefixes.values()):
        raise ValueError("prefixes")
    return prefixes


def _info_of(row: dict[str, str]) -> OntologyInfo | None:
    """A registration as read back; None (and an error in the log) for one whose values do not
    parse, which only an unlimited writer's SPARQL could have put there, or for a row missing
    values, which only a store answering in a shape not asked for (a remote one) could send:
    the server starts and serves without that ontology rather than stopping."""
    try:
        return OntologyInfo(
            row["name"],
            row["iri"],
            int(row["classes"]),
            int(row["properties"]),
            int(row["triples"]),
            row["sha"],
            row["loaded"],
            _prefixes(row.get("prefixes")),
        )
    except (ValueError, KeyError, TypeError):
        log.error("the registry's entry for ontology %r does not parse; it is left out", row.get("name"))
        return None


class Ontologies:
    def __init__(self, store: QuadStore, base_iri: str) -> None:
        self.store, self.base_iri = store, base_iri
        self.registry = vocab.registry_graph(base_iri)
        self._models: dict[str, OntologyModel] = {}
        self._lock = threading.Lock()  # loads and removals one at a time: the clash checks hold until written

    def default_iri(self, name: str) -> str:
        """The IRI of an ontology that declares none (dereferenceable under the base IRI)."""
        return f"{self.base_iri}ontology/{name}"

    # -- blocking calls (the async ones below run them in threads) ------------------------------

    def load_sync(
        self,
        name: str,
        data: bytes,
        media_type: str | None = None,
        filename: str | None = None,
        format: RdfFormat | str | None = None,
        replace: bool = False,
    ) -> LoadResult:
        """Load or reload `data` as ontology `name`. Raises InvalidName, OntologyError (unreadable,
        no classes, an IRI the server uses itself) or OntologyConflict (the name holds another
        ontology and `replace` is not set, the IRI is loaded under another name, or a graph of
        that IRI holds data that is no ontology of ours)."""
        name = check_name(name, "ontology")
        digest = hashlib.sha256(data).hexdigest()
        same = self._info(name)
        if same is not None and same.sha256 == digest:  # the same file under the same name: nothing to read or write
            return LoadResult(same, replaced=False, unchanged=True, warnings=[])
        triples, prefixes = read_with_prefixes(data, media_type, filename, format)
        declared = ontology_iri(triples)
        iri = declared or self.default_iri(name)
        if not self.may_name(iri):
            raise OntologyError(
                f"the ontology IRI {iri} is under this server's base IRI, where the server names its own things; "
                f"give the ontology another IRI (or one under {self.base_iri}ontology/)"
            )
        if declared is None:
            triples.append(Triple(NamedNode(iri), vocab.RDF_TYPE, OWL_ONTOLOGY))
        model = owlready.model(iri, triples)
        if not model.classes:
            raise OntologyError(
                "the ontology declares no classes (owl:Class or rdfs:Class): nothing to type entities with"
            )
        with self._lock:
            before = self._info(name)
            holder = self._name_of(iri)
            if holder is not None and holder != name:
                raise OntologyConflict(f"the ontology {iri} is loaded already, under the name {holder!r}")
            if holder is None and self.store.graph_exists(iri):
                raise OntologyConflict(f"the graph {iri} holds other data; loading the ontology {iri} would replace it")
            if before is not None and before.iri != iri and not replace:
                raise OntologyConflict(
                    f"the name {name!r} holds another ontology ({before.iri}); remove it first, "
                    "or replace it (--replace, ?replace=true)"
                )
            # whole seconds: the store writes an xsd:dateTime back without a fraction's trailing zeros
            info = OntologyInfo(
                name,
                iri,
                len(model.classes),
                len(model.properties),
                len(triples),
                digest,
                datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
                prefixes,
            )
            graphs = {iri} | ({before.iri} if before else set())
            drops = [f"DROP SILENT GRAPH {sparql_term(NamedNode(g))}" for g in sorted(graphs)]
            forget = (
                f"DELETE WHERE {{ GRAPH {sparql_term(self.registry)} {{ {sparql_term(NamedNode(before.iri))} ?p ?o }} "
                f"}}"
                if before
                else ""
            )
            quads = [Quad(t.subject, t.predicate, t.object, NamedNode(iri)) for t in triples] + self._registration(info)
            self.store.update(" ;\n".join(part for part in [*drops, forget, insert_data(quads)] if part))
            self._models[name] = model
        return LoadResult(info, replaced=before is not None, unchanged=False, warnings=model.warnings)

    def may_name(self, iri: str) -> bool:
        """Whether an ontology may have the IRI (and graph) `iri`: not one the server mints for
        itself (a collection's graph or registration, an entity, a document...)."""
        return not iri.startswith(self.base_iri) or iri.startswith(self.default_iri(""))

    def move_registry(self) -> int:
        """Move the registrations that data directories made before the registry graph keep in
        `{base}graph/ontologies` (also the graph of a collection named `ontologies`) into the
        registry; run at start. Returns how many ontologies moved."""
        old = NamedNode(f"{self.base_iri}graph/ontologies")
        rows = select_terms(
            self.store,
            f"""SELECT ?iri ?p ?o WHERE {{ GRAPH {sparql_term(old)} {{
            ?iri a {sparql_term(vocab.SR_ONTOLOGY)} ; {sparql_term(vocab.SR_NAME)} ?name ; ?p ?o }} }}""",
        )
        known = {info.iri for info in self._infos()}
        quads = [
            Quad(row["iri"], row["p"], row["o"], old)
            for row in rows
            if isinstance(row["iri"], NamedNode)
            and isinstance(row["p"], NamedNode)
            and self.may_name(row["iri"].value)
            and row["iri"].value not in known
        ]
        if quads:
            self.store.update(move_data(quads, self.registry))
            log.warning("moved %d ontology registrations into %s", len({q.subject for q in quads}), self.registry.value)
        return len({q.subject for q in quads})

    def _registration(self, info: OntologyInfo) -> list[Quad]:
        node, graph = NamedNode(info.iri), self.registry
        return [
            Quad(node, vocab.RDF_TYPE, vocab.SR_ONTOLOGY, graph),
            Quad(node, vocab.SR_NAME, Literal(info.name), graph),
            Quad(node, vocab.SR_CLASS_COUNT, Literal(info.classes), graph),
            Quad(node, vocab.SR_PROPERTY_COUNT, Literal(info.properties), graph),
            Quad(node, vocab.SR_TRIPLE_COUNT, Literal(info.triples), graph),
            Quad(node, vocab.SR_SHA256, Literal(info.sha256), graph),
            Quad(node, vocab.DCTERMS_MODIFIED, Literal(info.loaded, datatype=XSD_DATETIME), graph),
            Quad(node, vocab.SR_PREFIXES, Literal(json.dumps(info.prefixes, sort_keys=True), datatype=RDF_JSON), graph),
        ]

    def list_sync(self) -> list[OntologyInfo]:
        return self._infos()

    def info_sync(self, name: str) -> OntologyInfo:
        info = self._info(check_name(name, "ontology"))
        if info is None:
            raise UnknownOntology(name)
        return info

    def by_iri_sync(self, iri: str) -> OntologyInfo | None:
        """The ontology whose IRI this is (a trailing '#' or '/' either way)."""
        for info in self._infos():
            if info.iri.rstrip("#/") == iri.rstrip("#/"):
                return info
        return None

    def serialize_sync(self, name: str, format: RdfFormat) -> bytes:
        info = self.info_sync(name)
        return self.store.serialize_graph(info.iri, format, info.prefixes or None)

    def remove_sync(self, name: str) -> None:
        """Raises UnknownOntology, or OntologyConflict while a collection's extraction uses it."""
        with self._lock:
            info = self.info_sync(name)
            users = select(
                self.store,
                f"""SELECT ?c WHERE {{ GRAPH {sparql_term(self.registry)} {{ ?c {sparql_term(vocab.SR_USES_ONTOLOGY)}
                {sparql_term(Literal(name))} }} }}""",
            )
            if users:
                raise OntologyConflict(
                    f"the collection {users[0]['c'].rsplit('/', 1)[-1]!r} extracts with ontology {name!r}: "
                    "delete the collection first"
                )
            node = sparql_term(NamedNode(info.iri))
            self.store.update(
                f"DROP SILENT GRAPH {node} ;\nDELETE WHERE {{ GRAPH {sparql_term(self.registry)} {{ {node} ?p ?o }} }}"
            )
            self._models.pop(info.name, None)

    def model_sync(self, name: str) -> OntologyModel:
        """The ontology as owlready2 reads it, built from its graph on first use after a start."""
        if name not in self._models:
            info = self.info_sync(name)
            data = self.store.serialize_graph(info.iri, RdfFormat.N_TRIPLES)
            self._models[name] = owlready.model(info.iri, [q.triple for q in parse(data, format=RdfFormat.N_TRIPLES)])
        return self._models[name]

    def _infos(self, name: str | None = None) -> list[OntologyInfo]:
        where = f"FILTER(?name = {sparql_term(Literal(name))})" if name is not None else ""
        rows = select(
            self.store,
            vocab.SPARQL_PREFIXES
            + f"""SELECT ?iri ?name ?classes ?properties ?triples ?sha ?loaded ?prefixes
            WHERE {{ GRAPH {sparql_term(self.registry)} {{ ?iri a sr:Ontology ; sr:name ?name ; sr:classCount ?classes ;
              sr:propertyCount ?properties ; sr:tripleCount ?triples ; sr:sha256 ?sha ; dcterms:modified ?loaded
              OPTIONAL {{ ?iri sr:prefixes ?prefixes }} }} {where} }} ORDER BY ?name""",
        )
        return [info for row in rows if (info := _info_of(row)) is not None]

    def _info(self, name: str) -> OntologyInfo | None:
        found = self._infos(name)
        return found[0] if found else None

    def _name_of(self, iri: str) -> str | None:
        return next((info.name for info in self._infos() if info.iri == iri), None)

    # -- the async face, for the server ---------------------------------------------------------

    async def load(
        self, name: str, data: bytes, media_type: str | None = None, filename: str | None = None, replace: bool = False
    ) -> LoadResult:
        return await off_loop(self.load_sync, name, data, media_type, filename, None, replace)

    async def list(self) -> list[OntologyInfo]:
        return await off_loop(self.list_sync)

    async def info(self, name: str) -> OntologyInfo:
        return await off_loop(self.info_sync, name)

    async def by_iri(self, iri: str) -> OntologyInfo | None:
        return await off_loop(self.by_iri_sync, iri)

    async def serialize(self, name: str, format: RdfFormat) -> bytes:
        return await off_loop(self.serialize_sync, name, format)

    async def remove(self, name: str) -> None:
        await off_loop(self.remove_sync, name)
