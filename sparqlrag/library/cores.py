"""Knowledge cores: a collection as one portable file, imported elsewhere with no re-extraction.

A core is a zip file, open to any tool:

- `manifest.json`: format and version, the collection, the base IRI it was exported under, its
  ontology, the embedding model and dimension, counts, and the SHA-256 of every other member;
- `graphs.trig`: the collection's knowledge, provenance and trace graphs;
- `chunks.npy`/`chunks.jsonl`, `entities.npy`/`entities.jsonl`: the vector points (float32
  matrix, and one JSON payload per row with its IRI and facet).

Keyword rows are rebuilt from the chunk payloads' text (no model needed). Importing under
another base IRI or collection name moves every IRI under the old base (and the old
collection's segment) to the new one, and renames each fact's reifier after its moved fact (a
reifier's name is a hash of the fact). Everything is checked
before anything is written, and a failed write is undone, so a refused core leaves the
server as it was.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
import stat
import struct
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from pyoxigraph import NamedNode, Quad, RdfFormat, Triple, parse, serialize

from sparqlrag.library import librarian
from sparqlrag.library.collections import Collections
from sparqlrag.store import vocab
from sparqlrag.store.base import GraphNotFound
from sparqlrag.store.facts import fact_ntriples, parse_fact
from sparqlrag.store.vector_index import Kind
from sparqlrag.store.vocab import InvalidName, Iris, check_collection
from sparqlrag.threads import off_loop

log = logging.getLogger(__name__)


class Named(Protocol):
    @property
    def name(self) -> str: ...


class OntologyCatalogue(Protocol):
    """The loaded ontologies, as cores check them (ontology.registry.Ontologies)."""

    async def list(self) -> Sequence[Named]: ...


FORMAT, VERSION = "sparqlrag-core", 1
KINDS: tuple[Kind, ...] = ("chunks", "entities", "facts")
MEDIA_TYPE = "application/zip"
MAX_UNPACKED_BYTES = 8 * 2**30
MAX_MANIFEST_BYTES = 1 << 20
MAX_PAYLOAD_LINE = 16 << 20  # one chunk's or entity's payload
MAX_MEMBERS = 64  # a core has 8 members; its zip directory is checked against this before it is read
MAX_DIRECTORY_BYTES = 64 << 10
NPY_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
OPTIONAL_KINDS = ("facts",)  # cores exported before the fact index have none: `sparqlrag index` adds them
MEMBERS = ("graphs.trig", *(f"{kind}.{ext}" for kind in KINDS for ext in ("npy", "jsonl")))


class CoreInvalid(ValueError):
    """The file is not a knowledge core, or it is damaged (a checksum or a count does not hold)."""


class CoreMismatch(ValueError):
    """A sound core this server cannot take as it stands: another embedding model, an ontology
    not loaded here, a collection that already has data."""


@dataclass(frozen=True)
class ImportResult:
    collection: str
    quads: int
    chunks: int
    entities: int
    rebased_from: str | None  # the base IRI the core was exported under, when it differed
    renamed_from: str | None = None  # the collection it was exported from, when it differed


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Cores:
    def __init__(self, collections: Collections, ontologies: OntologyCatalogue, embedding_model: str) -> None:
        self.collections, self.ontologies = collections, ontologies
        self.store, self.base_iri, self.embedding_model = collections.store, collections.base_iri, embedding_model

    # -- export -----------------------------------------------------------------------------

    async def export(self, name: str, target: Path) -> dict[str, Any]:
        """Write the collection's core to `target`; returns its manifest. Raises UnknownCollection,
        OSError (the file cannot be written)."""
        info = await self.collections.get(name)
        if info is None:
            raise librarian.UnknownCollection(name)
        async with self.collections.locks.closed(name):  # a consistent picture: no ingest meanwhile
            return await off_loop(self._export, self.collections.iris(name), info.ontology, target)

    def _export(self, iris: Iris, ontology: str | None, target: Path) -> dict[str, Any]:
        # Each graph's N-Triples inside a TriG graph block: valid TriG (1.2, triple terms
        # included), written without turning the triples into Python objects (faster: bench/cores.py).
        # N-Triples escapes newlines, so a line is a triple.
        trig, quads = [], 0
        for graph in (iris.knowledge_graph, iris.source_graph, iris.trace_graph):
            try:
                triples = self.store.serialize_graph(graph.value, RdfFormat.N_TRIPLES)
            except GraphNotFound:
                continue
            trig += [f"{graph} {{\n".encode(), triples, b"}\n"]
            quads += triples.count(b"\n")
        members = {"graphs.trig": b"".join(trig)}
        counts = {"quads": quads}
        for kind in KINDS:
            vectors, payloads = self.collections.vectors.points(iris.collection, kind)
            buffer = io.BytesIO()
            np.save(buffer, vectors.astype(np.float32), allow_pickle=False)
            members[f"{kind}.npy"] = buffer.getvalue()
            members[f"{kind}.jsonl"] = "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in payloads).encode()
            counts[kind] = len(payloads)
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "collection": iris.collection,
            "base_iri": self.base_iri,
            "ontology": ontology,
            "embedding_model": self.embedding_model,
            "dim": self.collections.vectors.dim,
            "exported": datetime.now(UTC).isoformat(timespec="seconds"),
            "counts": counts,
            "sha256": {member: _sha256(data) for member, data in members.items()},
        }
        partial = target.with_name(target.name + ".partial")  # a failed export leaves no half a core under the name
        try:
            with zipfile.ZipFile(partial, "w") as core:
                core.writestr("manifest.json", json.dumps(manifest, indent=2), zipfile.ZIP_DEFLATED)
                for member, data in members.items():
                    # vectors barely compress; the rest shrinks ~5x
                    core.writestr(member, data, zipfile.ZIP_STORED if member.endswith(".npy") else zipfile.ZIP_DEFLATED)
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
        return manifest

    # -- import -----------------------------------------------------------------------------

    async def import_(self, source: Path, into: str | None = None) -> ImportResult:
        """Import the core at `source` into collection `into` (default: the one it was exported
        from). Raises InvalidName (for `into`, before the core is read), CoreInvalid, CoreMismatch,
        CollectionBusy."""
        if into is not None:
            check_collection(into)
        core = await off_loop(_read, source, self.collections.iris)
        exported = core.exported
        name = exported.collection if into is None else into
        if (
            core.manifest["embedding_model"] != self.embedding_model
            or core.manifest["dim"] != self.collections.vectors.dim
        ):
            raise CoreMismatch(
                f"the core's vectors come from {core.manifest['embedding_model']} ({core.manifest['dim']} "
                f"dimensions); this server embeds with {self.embedding_model} ({self.collections.vectors.dim})"
            )
        ontology = core.manifest["ontology"]
        if ontology is not None and not await self._ontology_loaded(ontology):
            raise CoreMismatch(
                f"the core's collection extracts with ontology {ontology!r}, which is not loaded here; load it first"
            )
        iris = self.collections.iris(name)
        async with self.collections.locks.closed(name):
            existing = await self.collections.get(name)
            if existing is not None and (existing.documents or existing.chunks or existing.facts):
                raise CoreMismatch(
                    f"collection {name!r} has data already ({existing.documents} documents, {existing.facts} "
                    "facts); import a core into a new or empty collection"
                )
            if existing is not None and existing.ontology != ontology:
                raise CoreMismatch(
                    f"collection {name!r} exists here with ontology {existing.ontology!r}, the core's uses {ontology!r}"
                )
            quads = core.quads if exported == iris else _rebase(core.quads, exported, iris)
            # the registration is the server's: a core from before the registry graph carries one
            # in its source graph, which goes; an existing collection keeps its own (one creation
            # time), a new one is registered here
            quads = [q for q in quads if q.subject != iris.collection_iri]
            if existing is None:
                quads += librarian.collection_quads(iris, ontology)
            registered = await off_loop(librarian.is_registered, self.store, iris)
            library = self.collections.library
            mark = await off_loop(library.begin, "import", name, registered=registered, ontology=ontology)
            try:
                await off_loop(self._write, iris, quads, core, exported)
            except BaseException:
                await off_loop(self._undo, iris, registered, ontology)
                mark.unlink(missing_ok=True)  # (the undo's drop takes the collection's marks too)
                raise
            mark.unlink()  # (a killed process leaves it: undo_interrupted)
        return ImportResult(
            name,
            len(quads),
            len(core.payloads["chunks"]),
            len(core.payloads["entities"]),
            exported.base if exported.base != self.base_iri else None,
            exported.collection if exported.collection != name else None,
        )

    async def _ontology_loaded(self, name: str) -> bool:
        return name in {info.name for info in await self.ontologies.list()}

    def _write(self, iris: Iris, quads: list[Quad], core: _Core, exported: Iris) -> None:
        self.store.add_quads(serialize(quads, format=RdfFormat.N_QUADS) or b"")
        move = None if exported == iris else _mover(exported, iris)
        for kind in KINDS:
            payloads = [p if move is None else _moved_payload(p, move, iris) for p in core.payloads[kind]]
            for facet in sorted({p.get("facet", "") for p in payloads}):
                rows = [i for i, p in enumerate(payloads) if p.get("facet", "") == facet]
                if rows:
                    points = [payloads[i] for i in rows]
                    kept = [{key: value for key, value in p.items() if key not in ("iri", "facet")} for p in points]
                    self.collections.vectors.upsert(
                        iris.collection, kind, [p["iri"] for p in points], core.vectors[kind][rows], kept, facet
                    )
            if kind == "chunks":  # the keyword index is the chunks' text
                self.collections.keywords.add(iris.collection, [(p["iri"], p["text"]) for p in payloads])
        self.collections.graph.rebuild(iris)  # derived from what was just written

    async def undo_interrupted(self) -> list[str]:
        """Undo the imports a killed process left half written (their marks say what the
        collection was before); run at start, before anything writes. Returns their collections."""
        undone = []
        for mark, details in await off_loop(self.collections.library.begun, "import"):
            name = details["collection"]
            await off_loop(
                self._undo, self.collections.iris(name), bool(details.get("registered")), details.get("ontology")
            )
            mark.unlink(missing_ok=True)
            log.warning("undid the import of a core into %r that a stopped process left unfinished", name)
            undone.append(name)
        return undone

    def _undo(self, iris: Iris, registered: bool, ontology: str | None) -> None:
        """The collection as it was: nothing, or registered and empty."""
        self.collections.drop_sync(iris)
        if registered:
            self.store.update(vocab.SPARQL_PREFIXES + librarian.register_collection(iris, ontology))


@dataclass(frozen=True)
class _Core:
    manifest: dict[str, Any]
    exported: Iris  # the collection's IRIs where it was exported
    quads: list[Quad]
    vectors: dict[Kind, np.ndarray]
    payloads: dict[Kind, list[dict[str, Any]]]


MANIFEST_FIELDS: dict[str, type | tuple[type, ...]] = {
    "collection": str,
    "base_iri": str,
    "ontology": (str, type(None)),
    "embedding_model": str,
    "dim": int,
    "counts": dict,
    "sha256": dict,
}
BASE_IRI = re.compile(r"https?://[^\s<>\"{}|\\^`]+[/#]")


def _check_manifest(manifest: object) -> dict[str, Any]:
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CoreInvalid(f"not a knowledge core: manifest.json does not say format {FORMAT!r}")
    if manifest.get("version") != VERSION:
        raise CoreInvalid(f"knowledge core version {manifest.get('version')!r}; this server reads version {VERSION}")
    for name, kind in MANIFEST_FIELDS.items():
        if not isinstance(manifest.get(name), kind) or isinstance(manifest.get(name), bool):
            raise CoreInvalid(f"the knowledge core's manifest has no valid {name!r}")
    if not BASE_IRI.fullmatch(manifest["base_iri"]):
        raise CoreInvalid(
            f"the knowledge core's base IRI {manifest['base_iri']!r} is not an http(s) IRI ending in / or #"
        )
    try:
        check_collection(manifest["collection"])
    except InvalidName as error:
        raise CoreInvalid(f"the knowledge core's collection: {error}") from None
    return manifest


def _read(source: Path, iris_of: Callable[[str, str], Iris]) -> _Core:
    """The core at `source`, every member checked against the manifest (its collection's IRIs
    made by `iris_of(name, base)`). Raises CoreInvalid.

    Nothing is inflated into memory before it is checked: checksums are computed over streams,
    and the members are then parsed from streams (a zip's member inflates to no more than its
    declared size, which the total is bounded by).
    """
    _check_directory(source)
    try:
        with zipfile.ZipFile(source) as core:
            for info in core.infolist():  # members are read by name, never extracted; still, no paths or links
                if "/" in info.filename or "\\" in info.filename or stat.S_ISLNK(info.external_attr >> 16):
                    raise CoreInvalid(f"the knowledge core has a path or link as a member: {info.filename[:200]!r}")
            unpacked = sum(info.file_size for info in core.infolist())
            if unpacked > MAX_UNPACKED_BYTES:
                raise CoreInvalid(
                    f"the knowledge core unpacks to {unpacked} bytes, over the {MAX_UNPACKED_BYTES} byte limit"
                )
            if core.getinfo("manifest.json").file_size > MAX_MANIFEST_BYTES:
                raise CoreInvalid(f"the knowledge core's manifest is over {MAX_MANIFEST_BYTES} bytes")
            try:
                manifest = _check_manifest(json.loads(core.read("manifest.json")))
            except ValueError as error:  # not JSON (CoreInvalid is a ValueError too)
                raise (
                    error
                    if isinstance(error, CoreInvalid)
                    else CoreInvalid(f"the knowledge core's manifest is unreadable: {error}")
                ) from None
            names = set(core.namelist())
            kinds = [kind for kind in KINDS if kind not in OPTIONAL_KINDS or f"{kind}.npy" in names]
            for name in ("graphs.trig", *(f"{kind}.{ext}" for kind in kinds for ext in ("npy", "jsonl"))):
                if manifest["sha256"].get(name) != _streamed_sha256(core, name):
                    raise CoreInvalid(f"the knowledge core is damaged: {name} does not match its checksum")
            with core.open("graphs.trig") as trig:
                quads = list(parse(trig, format=RdfFormat.TRIG))
            payloads = {kind: _payloads(core, f"{kind}.jsonl") if kind in kinds else [] for kind in KINDS}
            vectors = {
                kind: _vectors(core, f"{kind}.npy", len(payloads[kind]), manifest["dim"])
                if kind in kinds
                else np.zeros((0, manifest["dim"]), dtype=np.float32)
                for kind in KINDS
            }
            for payload in payloads["facts"]:  # each fact must read back, or a rebase could not move it
                if isinstance(payload, dict) and isinstance(payload.get("fact"), str):
                    parse_fact(payload["fact"])
    except CoreInvalid:
        raise
    except zipfile.BadZipFile as error:
        raise CoreInvalid(f"not a knowledge core (not a zip file): {error}") from None
    except KeyError as error:
        raise CoreInvalid(f"the knowledge core lacks {error.args[0]}") from None
    except (SyntaxError, ValueError) as error:  # not JSON, not TriG, not a .npy header
        raise CoreInvalid(f"the knowledge core is unreadable: {error}") from None
    iris = iris_of(manifest["collection"], manifest["base_iri"])
    graphs = {iris.knowledge_graph, iris.source_graph, iris.trace_graph}
    if stray := next((q.graph_name for q in quads if q.graph_name not in graphs), None):
        raise CoreInvalid(f"the knowledge core holds graph {stray} outside collection {iris.collection!r}")
    required: list[tuple[Kind, tuple[str, ...]]] = [
        ("chunks", ("iri", "text")),
        ("entities", ("iri",)),
        ("facts", ("iri", "fact")),
    ]
    for kind, needs in required:
        if not all(isinstance(p, dict) and all(isinstance(p.get(key), str) for key in needs) for p in payloads[kind]):
            raise CoreInvalid(
                f"the knowledge core's {kind} vectors do not match their payloads (each needs {' and '.join(needs)})"
            )
    if manifest["counts"].get("quads") != len(quads):
        raise CoreInvalid("the knowledge core's graphs do not hold the number of quads its manifest says")
    return _Core(manifest, iris, quads, vectors, payloads)


def _check_directory(source: Path) -> None:
    """Refuse a zip whose central directory (as its end record, or zip64 end record, declares
    it) has more than MAX_MEMBERS members or MAX_DIRECTORY_BYTES, before zipfile reads it: a
    zip of 500,000 empty members took seconds and 200 MB to open."""
    with source.open("rb") as file:
        size = file.seek(0, 2)
        tail_start = max(0, size - (1 << 16) - 22)  # the end record, and a comment of up to 64 KiB
        file.seek(tail_start)
        tail = file.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < 22:
            raise CoreInvalid("not a knowledge core (not a zip file)")
        members, directory = struct.unpack("<HI", tail[at + 10 : at + 16])
        if (members == 0xFFFF or directory == 0xFFFFFFFF) and at >= 20 and tail[at - 20 : at - 16] == b"PK\x06\x07":
            (record,) = struct.unpack("<Q", tail[at - 12 : at - 4])  # the zip64 end record's offset
            file.seek(record)
            zip64 = file.read(56)
            if len(zip64) < 56 or zip64[:4] != b"PK\x06\x06":
                raise CoreInvalid("not a knowledge core (a damaged zip64 directory)")
            members, directory = struct.unpack("<QQ", zip64[32:48])
    if members > MAX_MEMBERS or directory > MAX_DIRECTORY_BYTES:
        raise CoreInvalid(
            f"the knowledge core's zip lists {members} members in a {directory} byte directory; "
            f"a core has {len(MEMBERS) + 1} (at most {MAX_MEMBERS} are read)"
        )


def _streamed_sha256(core: zipfile.ZipFile, name: str) -> str:
    digest = hashlib.sha256()
    with core.open(name) as member:
        while block := member.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _payloads(core: zipfile.ZipFile, name: str) -> list[Any]:
    """One JSON value per line, no line longer than MAX_PAYLOAD_LINE."""
    payloads = []
    with core.open(name) as member:
        while line := member.readline(MAX_PAYLOAD_LINE + 1):
            if len(line) > MAX_PAYLOAD_LINE:
                raise CoreInvalid(f"the knowledge core's {name} has a line over {MAX_PAYLOAD_LINE} bytes")
            if line.strip():
                payloads.append(json.loads(line))
    return payloads


def _vectors(core: zipfile.ZipFile, name: str, rows: int, dim: int) -> np.ndarray:
    """A rows x dim float32 matrix; its header is checked before its data is read."""
    with core.open(name) as member:
        header_reader = NPY_HEADER_READERS.get(np.lib.format.read_magic(member))
        if header_reader is None:
            raise CoreInvalid(f"the knowledge core's {name} is not in a .npy format version this server reads")
        shape, fortran_order, dtype = header_reader(member)
        if shape != (rows, dim) or fortran_order or dtype != np.dtype("<f4"):
            raise CoreInvalid(
                f"the knowledge core's {name.removesuffix('.npy')} vectors do not match their payloads "
                f"(a {rows} x {dim} float32 matrix)"
            )
        data = member.read(rows * dim * 4 + 1)
    if len(data) != rows * dim * 4:
        raise CoreInvalid(f"the knowledge core's {name} holds {len(data)} bytes of vectors, not {rows * dim * 4}")
    return np.frombuffer(data, dtype="<f4").reshape(rows, dim)


COLLECTION_SEGMENTS = ("graph", "collection", "id", "stmt", "doc", "trace")  # {base}{segment}/{collection}...


def _mover(old: Iris, new: Iris) -> Callable[[Any], Any]:
    """A term with every IRI of the `old` collection (triple terms included) moved to the `new`:
    `{base}{segment}/{collection}...` to the new base and name, any other IRI under the old base
    to the new base."""
    moves = [
        (f"{old.base}{segment}/{old.collection}", f"{new.base}{segment}/{new.collection}")
        for segment in COLLECTION_SEGMENTS
    ]

    def moved_iri(value: str) -> str:
        for before, after in moves:
            if value == before or value.startswith(before + "/"):
                return after + value[len(before) :]
        return new.base + value[len(old.base) :] if value.startswith(old.base) else value

    def moved(term: Any) -> Any:
        if isinstance(term, NamedNode):
            return NamedNode(moved_iri(term.value))
        if isinstance(term, Triple):
            return Triple(moved(term.subject), moved(term.predicate), moved(term.object))
        return term

    return moved


def _rebase(quads: list[Quad], old: Iris, iris: Iris) -> list[Quad]:
    """The quads with every IRI of the `old` collection moved to `iris` (see _mover); each
    reifier renamed after its moved fact, wherever it is named (provenance and traces)."""
    moved = _mover(old, iris)
    quads = [Quad(moved(q.subject), moved(q.predicate), moved(q.object), moved(q.graph_name)) for q in quads]
    renamed: dict[object, NamedNode] = {
        q.subject: iris.statement(q.object)
        for q in quads
        if q.predicate == vocab.RDF_REIFIES and isinstance(q.object, Triple)
    }
    return [
        Quad(renamed.get(q.subject, q.subject), q.predicate, renamed.get(q.object, q.object), q.graph_name)
        for q in quads
    ]


def _moved_payload(payload: dict[str, Any], move: Callable[[Any], Any], iris: Iris) -> dict[str, Any]:
    """A vector payload with its IRIs (the point's, a chunk's document) moved by `move` (_mover)
    to `iris`; a fact's point is its moved fact's, named by that fact's reifier."""
    moved = {
        key: move(NamedNode(value)).value if key in ("iri", "document") and isinstance(value, str) else value
        for key, value in payload.items()
    }
    if isinstance(payload.get("fact"), str):
        fact = move(parse_fact(payload["fact"]))
        moved |= {"fact": fact_ntriples(fact), "iri": iris.statement(fact).value}
    return moved
