"""An ontology's owl:imports are kept as triples and never followed: no file is read, no URL
fetched, and an import of a port that never answers cannot hold an upload (or, through
owlready2's lock, every other upload)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import LiveServer
from tests.security.conftest import READ, WRITE, Listener, still_serving


@pytest.fixture(scope="module")
def black_hole() -> Iterator[Listener]:
    opened = Listener(hang=True)
    yield opened
    opened.close()


def imports(secret: Path, listener: Listener, black_hole: Listener) -> list[str]:
    return [
        secret.as_uri(),
        "file:///etc/passwd",
        "file:///does/not/exist.owl",
        listener.url("onto.owl"),
        black_hole.url("onto"),
    ]


def turtle(name: str, targets: list[str]) -> bytes:
    lines = [f"<http://onto.example/{name}> a <http://www.w3.org/2002/07/owl#Ontology> ."]
    lines += [f"<http://onto.example/{name}> <http://www.w3.org/2002/07/owl#imports> <{t}> ." for t in targets]
    lines.append(f"<http://onto.example/{name}#Thing> a <http://www.w3.org/2002/07/owl#Class> .")
    return "\n".join(lines).encode()


def rdf_xml(name: str, targets: list[str]) -> bytes:
    owl = "http://www.w3.org/2002/07/owl#"
    imported = "".join(f'<owl:imports rdf:resource="{t}"/>' for t in targets)
    return (
        f'<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:owl="{owl}">'
        f'<owl:Ontology rdf:about="http://onto.example/{name}">{imported}</owl:Ontology>'
        f'<owl:Class rdf:about="http://onto.example/{name}#Thing"/></rdf:RDF>'
    ).encode()


def owl_xml(name: str, targets: list[str]) -> bytes:
    imported = "".join(f"<Import>{t}</Import>" for t in targets)
    return (
        f'<?xml version="1.0"?><Ontology xmlns="http://www.w3.org/2002/07/owl#" ontologyIRI="http://onto.example/{name}">'
        f'{imported}<Declaration><Class IRI="http://onto.example/{name}#Thing"/></Declaration></Ontology>'
    ).encode()


@pytest.mark.parametrize(
    "media_type, build", [("text/turtle", turtle), ("application/rdf+xml", rdf_xml), ("application/owl+xml", owl_xml)]
)
def test_imports_are_not_followed(
    hostile: LiveServer, listener: Listener, black_hole: Listener, secret_file: Path, media_type: str, build
) -> None:
    name = "imp-" + media_type.split("/")[1].replace("+", "-")
    body = build(name, imports(secret_file, listener, black_hole))
    with hostile.client(WRITE, timeout=20) as client:  # a followed import of the black hole would time out
        response = client.put(f"/api/v1/ontologies/{name}", content=body, headers={"Content-Type": media_type})
        assert response.status_code == 201, response.text
        shown = client.get(f"/api/v1/ontologies/{name}", headers={"Accept": "text/turtle"})
    assert shown.status_code == 200
    assert b"the-secret-value" not in shown.content and b"root:" not in shown.content
    assert b"owl#imports" in shown.content or b"owl:imports" in shown.content  # kept, as data
    assert listener.contacts == [] and black_hole.contacts == []
    still_serving(hostile)


def test_existing_and_missing_files_answer_alike(hostile: LiveServer, listener: Listener, black_hole: Listener) -> None:
    """No existence oracle: importing /etc/passwd and a missing file give the same answer."""
    answers = []
    with hostile.client(WRITE, timeout=20) as client:
        for index, target in enumerate(["file:///etc/passwd", "file:///does/not/exist"]):
            response = client.put(
                f"/api/v1/ontologies/oracle-{index}",
                content=turtle(f"oracle{index}", [target]),
                headers={"Content-Type": "text/turtle"},
            )
            answers.append((response.status_code, response.json()["classes"]))
    assert answers == [(201, 1), (201, 1)]


def test_uploads_run_side_by_side(
    hostile: LiveServer, listener: Listener, black_hole: Listener, secret_file: Path
) -> None:
    statuses: list[int] = []

    def upload(index: int) -> None:
        with hostile.client(WRITE, timeout=20) as client:
            body = turtle(f"side{index}", [black_hole.url(f"side{index}")])
            statuses.append(
                client.put(
                    f"/api/v1/ontologies/side-{index}", content=body, headers={"Content-Type": "text/turtle"}
                ).status_code
            )

    threads = [threading.Thread(target=upload, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [201] * 4
    assert black_hole.contacts == []
    with hostile.client(READ) as client:
        assert {"side-0", "side-3"} <= {o["name"] for o in client.get("/api/v1/ontologies").json()["ontologies"]}
