"""The OWL side of an ontology: owlready2 reads it, and what extraction and NL -> SPARQL need
(classes with their parents, properties with domain, range, inverse and cardinalities) is
copied out into plain, immutable Python objects.

owlready2 is not thread-safe and prints its warnings to stderr, so every use goes through
`owlready` (one lock; warnings captured and returned to the caller). RDFS-style vocabularies
(schema.org: rdfs:Class, rdf:Property, domainIncludes/rangeIncludes) and classes that an
ontology uses without declaring (foaf:Person in ORG) are declared as OWL first, or owlready2
would not see them.
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from pyoxigraph import BlankNode, Literal, NamedNode, RdfFormat, Triple, serialize

from sparqlrag.store import vocab
from sparqlrag.store.select import lexical
from sparqlrag.store.vocab import local_name

SCHEMA_ORG = ("http://schema.org/", "https://schema.org/")
RDF_PROPERTY = vocab.term(vocab.RDF, "Property")
RDFS_CLASS = vocab.term(vocab.RDFS, "Class")
RDFS_SUBCLASS = vocab.term(vocab.RDFS, "subClassOf")
RDFS_DOMAIN = vocab.term(vocab.RDFS, "domain")
RDFS_RANGE = vocab.term(vocab.RDFS, "range")
RDFS_COMMENT = vocab.term(vocab.RDFS, "comment")
OWL_CLASS = vocab.term(vocab.OWL, "Class")
OWL_ONTOLOGY = vocab.term(vocab.OWL, "Ontology")
OWL_IMPORTS = vocab.term(vocab.OWL, "imports")
OWL_OBJECT_PROPERTY = vocab.term(vocab.OWL, "ObjectProperty")
OWL_DATATYPE_PROPERTY = vocab.term(vocab.OWL, "DatatypeProperty")
OWL_THING = vocab.OWL + "Thing"
BUILT_IN = (vocab.RDF, vocab.RDFS, vocab.OWL, vocab.XSD)  # the languages' own terms are never the ontology's classes
# ranges that make a property a datatype property: XSD, rdfs:Literal, rdf:langString, schema.org's data types
SCHEMA_DATATYPES = {"Text", "Number", "Integer", "Float", "Boolean", "Date", "DateTime", "Time", "URL", "DataType"}


def _is_datatype(iri: str) -> bool:
    return (
        iri.startswith(vocab.XSD)
        or iri in (vocab.RDFS + "Literal", vocab.RDF + "langString", vocab.RDF + "PlainLiteral")
        or any(iri.startswith(ns) and iri[len(ns) :] in SCHEMA_DATATYPES for ns in SCHEMA_ORG)
    )


@dataclass(frozen=True)
class OntClass:
    iri: str
    label: str
    comment: str = ""
    parents: tuple[str, ...] = ()


@dataclass(frozen=True)
class OntProperty:
    iri: str
    kind: str  # "object", "datatype" or "annotation"
    label: str
    comment: str = ""
    domain: tuple[str, ...] = ()  # any of these classes (schema.org's reading; OWL's would be all of them)
    range: tuple[str, ...] = ()
    inverse: str | None = None
    functional: bool = False


@dataclass(frozen=True)
class Cardinality:
    owner: str  # the class the restriction is on
    property: str
    minimum: int | None
    maximum: int | None


@dataclass
class OntologyModel:
    iri: str
    classes: dict[str, OntClass]
    properties: dict[str, OntProperty]
    cardinalities: list[Cardinality] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def ancestors(self, iri: str) -> set[str]:
        """The class and every class above it."""
        seen, todo = set(), [iri]
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo += self.classes[node].parents if node in self.classes else []
        return seen

    def is_a(self, cls: str, expected: Iterable[str]) -> bool:
        """Whether `cls` is one of `expected` or below one (an empty `expected` allows anything)."""
        expected = set(expected) - {OWL_THING}
        return not expected or bool(self.ancestors(cls) & expected)


class OntologyError(ValueError):
    """An ontology that cannot be read or used; the message says why."""


def read_owl_xml(data: bytes) -> list[Triple]:
    """An OWL/XML file's triples, from owlready2's parser alone: loading it into a world would
    follow its imports. The parser is expat, which fetches no external entity."""
    from owlready2 import OwlReadyOntologyParsingError
    from owlready2.owlxml_2_ntriples import parse as parse_owl_xml

    blanks: dict[str, BlankNode] = {}
    triples: list[Triple] = []

    def node(value: str) -> NamedNode | BlankNode:
        return blanks.setdefault(value, BlankNode()) if value.startswith("_:") else NamedNode(value)

    def on_object(s: str, p: str, o: str) -> None:
        triples.append(Triple(node(s), NamedNode(p), node(o)))

    def on_data(s: str, p: str, o: str, d: str) -> None:
        if d.startswith("@"):
            literal = Literal(o, language=d[1:])
        else:
            literal = Literal(o, datatype=NamedNode(d)) if d else Literal(o)
        triples.append(Triple(node(s), NamedNode(p), literal))

    try:
        parse_owl_xml(io.BytesIO(data), on_object, on_data)
    except OwlReadyOntologyParsingError as error:  # also what a term our callbacks refuse raises
        where = str(error).replace("OWL/XML parsing error in file ???, ", "").rstrip(".")
        raise OntologyError(f"not valid OWL/XML ({where})") from None
    return triples


class Owlready:
    """owlready2 behind a lock, its stderr warnings captured."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def model(self, iri: str, triples: list[Triple]) -> OntologyModel:
        """The ontology's classes, properties and cardinalities, as owlready2 reads them."""
        import owlready2

        # owlready2 follows owl:imports over HTTP and into local files, whatever the settings say,
        # so it never sees one; the imports stay in the stored ontology as plain triples
        declared = (
            serialize([t for t in _as_owl(triples) if t.predicate != OWL_IMPORTS], format=RdfFormat.N_TRIPLES) or b""
        )
        warnings = io.StringIO()
        with self._lock, contextlib.redirect_stderr(warnings):
            world = owlready2.World()
            try:
                world.get_ontology(iri).load(fileobj=io.BytesIO(declared), format="ntriples")
                model = _copy_out(world, iri, triples)
            finally:
                world.close()
        model.warnings = [
            line.removeprefix("* Owlready2 * ").strip() for line in warnings.getvalue().splitlines() if line.strip()
        ]
        return model


owlready = Owlready()


def _as_owl(triples: list[Triple]) -> list[Triple]:
    """The triples plus OWL declarations owlready2 needs: rdfs:Class and every class used but not
    declared become owl:Class (not the data types: xsd, rdfs:Literal, schema:Text), rdf:Property an object or
    datatype property by its range, and
    schema.org's domainIncludes/rangeIncludes rdfs:domain/rdfs:range."""
    added: list[Triple] = []
    typed: dict[NamedNode, set[str]] = {}
    for t in triples:
        if t.predicate == vocab.RDF_TYPE and isinstance(t.subject, NamedNode) and isinstance(t.object, NamedNode):
            typed.setdefault(t.subject, set()).add(t.object.value)
    ranges: dict[NamedNode, list[str]] = {}
    used_as_class: set[NamedNode] = set()
    for t in triples:
        predicate = t.predicate.value
        if any(predicate == ns + "domainIncludes" for ns in SCHEMA_ORG):
            added.append(Triple(t.subject, RDFS_DOMAIN, t.object))
        elif any(predicate == ns + "rangeIncludes" for ns in SCHEMA_ORG):
            added.append(Triple(t.subject, RDFS_RANGE, t.object))
    for t in [*triples, *added]:
        if not isinstance(t.object, NamedNode):
            continue
        if t.predicate == RDFS_RANGE and isinstance(t.subject, NamedNode):
            ranges.setdefault(t.subject, []).append(t.object.value)
        if t.predicate in (RDFS_SUBCLASS, RDFS_DOMAIN) or (
            t.predicate == RDFS_RANGE and not _is_datatype(t.object.value)
        ):
            used_as_class.add(t.object)
        if t.predicate == RDFS_SUBCLASS and isinstance(t.subject, NamedNode):
            used_as_class.add(t.subject)
    for node, types in typed.items():
        if RDFS_CLASS.value in types:
            used_as_class.add(node)
        if RDF_PROPERTY.value in types and not types & {
            OWL_OBJECT_PROPERTY.value,
            OWL_DATATYPE_PROPERTY.value,
            vocab.OWL + "AnnotationProperty",
        }:
            datatype = bool(ranges.get(node)) and all(_is_datatype(r) for r in ranges[node])
            added.append(Triple(node, vocab.RDF_TYPE, OWL_DATATYPE_PROPERTY if datatype else OWL_OBJECT_PROPERTY))
    for node in used_as_class:
        if (
            not node.value.startswith(BUILT_IN)
            and not _is_datatype(node.value)
            and OWL_CLASS.value not in typed.get(node, set())
        ):
            added.append(Triple(node, vocab.RDF_TYPE, OWL_CLASS))
    return [*triples, *added]


def _text(values: list[object]) -> str:
    """The English (or untagged, or first) of a label or comment's values."""
    texts = [(getattr(x, "lang", "") or "", str(x)) for x in values]
    for wanted in ("en", ""):
        for lang, text in texts:
            if lang == wanted:
                return text
    return texts[0][1] if texts else ""


def _iris(entities: Iterable[object]) -> tuple[str, ...]:
    """IRIs of named classes, unions flattened (owlready2 gives `Or` for owl:unionOf)."""
    import owlready2

    found: list[str] = []
    for entity in entities:
        if isinstance(entity, owlready2.Or):
            found += _iris(entity.Classes)
        elif isinstance(getattr(entity, "iri", None), str):
            found.append(entity.iri)  # type: ignore[attr-defined]
    return tuple(dict.fromkeys(found))


def _copy_out(world: object, iri: str, triples: list[Triple]) -> OntologyModel:
    import owlready2

    assert isinstance(world, owlready2.World)
    datatype_ranges: dict[str, list[str]] = {}
    for t in triples:
        if t.predicate == RDFS_RANGE and isinstance(t.object, NamedNode) and _is_datatype(t.object.value):
            datatype_ranges.setdefault(lexical(t.subject), []).append(lexical(t.object))
    classes: dict[str, OntClass] = {}
    cardinalities: list[Cardinality] = []
    kinds = {owlready2.EXACTLY: (True, True), owlready2.MIN: (True, False), owlready2.MAX: (False, True)}
    for cls in world.classes():
        if cls.iri == OWL_THING:
            continue
        parents = tuple(p for p in _iris(p for p in cls.is_a if isinstance(p, owlready2.ThingClass)) if p != OWL_THING)
        classes[cls.iri] = OntClass(cls.iri, _text(cls.label) or local_name(cls.iri), _text(cls.comment), parents)
        for restriction in cls.is_a:
            if isinstance(restriction, owlready2.Restriction) and restriction.type in kinds:
                low, high = kinds[restriction.type]
                cardinalities.append(
                    Cardinality(
                        cls.iri,
                        restriction.property.iri,
                        restriction.cardinality if low else None,
                        restriction.cardinality if high else None,
                    )
                )
    properties: dict[str, OntProperty] = {}
    for prop in world.properties():
        if isinstance(prop, owlready2.AnnotationPropertyClass):
            kind = "annotation"
        elif isinstance(prop, owlready2.DataPropertyClass):
            kind = "datatype"
        else:
            kind = "object"
        ranges = tuple(datatype_ranges.get(prop.iri, ())) if kind == "datatype" else _iris(prop.range)
        inverse = prop.inverse_property.iri if getattr(prop, "inverse_property", None) is not None else None
        properties[prop.iri] = OntProperty(
            prop.iri,
            kind,
            _text(prop.label) or local_name(prop.iri),
            _text(prop.comment),
            _iris(prop.domain),
            ranges,
            inverse,
            owlready2.FunctionalProperty in prop.is_a,
        )
    return OntologyModel(iri, classes, properties, cardinalities)


def ontology_iri(triples: list[Triple]) -> str | None:
    """The first owl:Ontology the file declares (PROV declares two; the first is the main one)."""
    for t in triples:
        if t.predicate == vocab.RDF_TYPE and t.object == OWL_ONTOLOGY and isinstance(t.subject, NamedNode):
            return t.subject.value
    return None
