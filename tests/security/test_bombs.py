"""Small inputs that would grow large inside the server are refused before they do: a knowledge
core whose member inflates, a chunked multipart upload past its limit, RDF/XML entity bombs."""

from __future__ import annotations

import hashlib
import io
import json
import select
import socket
import subprocess
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from sparqlrag.library import cores
from sparqlrag.store.vocab import Iris
from tests.conftest import SPARQLRAG, LiveServer
from tests.security.conftest import WRITE, snapshot, still_serving

MiB = 1 << 20


def core_with(path: Path, member: str, blocks: int, block: bytes) -> Path:
    """A core whose `member` is `blocks` copies of `block`, deflated, its checksum right (as a forger's would be)."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as core:
        with core.open(member, "w") as out:
            for _ in range(blocks):
                out.write(block)
                digest.update(block)
        sums = {name: hashlib.sha256(b"").hexdigest() for name in cores.MEMBERS} | {member: digest.hexdigest()}
        for name in cores.MEMBERS:
            if name != member:
                core.writestr(name, b"")
        manifest = {
            "format": cores.FORMAT,
            "version": cores.VERSION,
            "collection": "bomb",
            "base_iri": "http://kb.example/",
            "ontology": None,
            "embedding_model": "sentence-transformers/all-MiniLM-L6-v2",
            "dim": 384,
            "counts": {"quads": 0, "chunks": 0, "entities": 0},
            "sha256": sums,
        }
        core.writestr("manifest.json", json.dumps(manifest))
    return path


def peak_while(call) -> int:
    """Bytes allocated by Python at the peak of `call()`, above where it started."""
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        call()
        return tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def test_an_inflating_core_is_refused_without_inflating(hostile: LiveServer, tmp_path: Path) -> None:
    bomb = core_with(tmp_path / "bomb.zip", "graphs.trig", 200, bytes(MiB))  # 200 MiB of zeros in ~200 KB
    assert bomb.stat().st_size < MiB
    with hostile.client(WRITE) as client:
        assert client.post("/api/v1/collections", json={"name": "bomb"}).status_code == 201
    before = snapshot(hostile)
    responses = []

    def post() -> None:
        with hostile.client(WRITE) as client:
            responses.append(
                client.post(
                    "/api/v1/collections/bomb/core",
                    content=bomb.read_bytes(),
                    headers={"Content-Type": "application/zip"},
                )
            )

    peak = peak_while(post)
    assert responses[0].status_code == 400 and responses[0].json()["error"] == "invalid_core", responses[0].text
    assert peak < 32 * MiB, f"{peak / MiB:.0f} MiB allocated"
    assert snapshot(hostile) == before
    still_serving(hostile)


def npy_header(rows: int) -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": "<f4", "fortran_order": False, "shape": (rows, 384)})
    return out.getvalue()


@pytest.mark.parametrize("member, first", [("chunks.jsonl", b"a" * MiB), ("chunks.npy", npy_header(100_000_000))])
def test_oversized_core_members_are_refused_as_they_stream(tmp_path: Path, member: str, first: bytes) -> None:
    """A payload line with no end; vectors whose header promises far more than the payloads need."""
    bomb = core_with(tmp_path / "bomb.zip", member, 64, first.ljust(MiB, b"a"))

    def read() -> None:
        with pytest.raises(cores.CoreInvalid, match="line over|do not match"):
            cores._read(bomb, lambda name, base: Iris(base, name))

    assert peak_while(read) < 40 * MiB  # 64 MiB inflated would not be


def test_a_chunked_multipart_upload_stops_at_the_limit(hostile: LiveServer) -> None:
    limit = hostile.settings.max_ontology_bytes
    before = snapshot(hostile)
    host, port = hostile.url.removeprefix("http://").split(":")
    sent, response = 0, b""
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /api/v1/ontologies?name=big HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "
            + WRITE.encode()
            + b"\r\nContent-Type: multipart/form-data; boundary=XyZ\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        head = (
            b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="big.ttl"\r\n'
            b"Content-Type: text/turtle\r\n\r\n"
        )
        sock.sendall(b"%x\r\n%s\r\n" % (len(head), head))
        piece = b"# " + b"x" * (64 * 1024 - 3) + b"\n"
        try:
            while sent < 200 * MiB and not select.select([sock], [], [], 0)[0]:
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                sent += len(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed
        while chunk := sock.recv(65536):
            response += chunk
            if b"\r\n\r\n" in response:
                break
    assert response.startswith(b"HTTP/1.1 413"), response[:200]
    assert sent < limit + 8 * MiB  # it stopped reading near the limit, not after 200 MiB
    assert snapshot(hostile) == before
    still_serving(hostile)


BOMB = (
    b'<?xml version="1.0"?><!DOCTYPE rdf:RDF [<!ENTITY a "aaaaaaaaaa">'
    + b"".join(b'<!ENTITY %c "%s">' % (98 + i, (b"&%c;" % (97 + i)) * 10) for i in range(6))
    + b']><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:owl="http://www.w3.org/2002/07/owl#">'
    b'<owl:Class rdf:about="http://bomb.example/C"><owl:p xmlns:owl="http://p/">&g;</owl:p></owl:Class></rdf:RDF>'
)
PROTEGE_STYLE = (
    b'<?xml version="1.0"?><!DOCTYPE rdf:RDF [<!ENTITY owl "http://www.w3.org/2002/07/owl#" >]>'
    b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
    b'<rdf:Description rdf:about="http://ok.example/C"><rdf:type '
    b'rdf:resource="&owl;Class"/></rdf:Description></rdf:RDF>'
)


def test_rdf_xml_entity_bombs_are_refused_everywhere(hostile: LiveServer, tmp_path: Path) -> None:
    assert len(BOMB) < 613  # the probe's was 613 bytes; this one expands to 10,000,000 characters
    before = snapshot(hostile)
    headers = {"Content-Type": "application/rdf+xml"}
    with hostile.client(WRITE) as client:
        store = client.put("/store", params={"graph": "http://bomb.example/g"}, content=BOMB, headers=headers)
        ontology = client.put("/api/v1/ontologies/bomb", content=BOMB, headers=headers)
        fine = client.put("/store", params={"graph": "http://ok.example/g"}, content=PROTEGE_STYLE, headers=headers)
    assert (store.status_code, store.json()["error"]) == (400, "invalid_rdf")
    assert "entity" in store.json()["detail"]
    assert (ontology.status_code, ontology.json()["error"]) == (400, "bad_ontology")
    assert fine.status_code == 201, fine.text  # entities for namespaces, as Protégé writes them, still load
    assert [q for q in snapshot(hostile) if q not in before] == [
        b"<http://ok.example/C> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
        b"<http://www.w3.org/2002/07/owl#Class> <http://ok.example/g> ."
    ]
    (tmp_path / "bomb.rdf").write_bytes(BOMB)
    cli = subprocess.run(
        [SPARQLRAG, "load", str(tmp_path / "bomb.rdf"), "--data-dir", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 2 and "entity" in cli.stderr and "Traceback" not in cli.stderr
