"""SERVICE and LOAD cannot make the server contact anything while remote access is off, however
the query is written: the store's SPARQL threads have no sockets (store/sandbox.py)."""

from __future__ import annotations

import pytest

from sparqlrag.store import EmbeddedStore, sandbox
from sparqlrag.store.base import RemoteAccessRefused
from tests.conftest import LiveServer
from tests.security.conftest import READ, WRITE, Listener, snapshot, sparql, still_serving


def reproductions(target: str) -> list[tuple[str, str, str]]:
    """The probe's exact requests: (token, kind, text)."""
    return [
        (READ, "query", f"SELECT * WHERE {{ BIND(<http://a/\\u0041#> AS ?x) SERVICE <{target}> {{ ?a ?b ?c }} }}"),
        (
            WRITE,
            "update",
            f"INSERT DATA {{ <http://a/\\u0041#> <http://p> 1 }} ; LOAD <{target}> INTO GRAPH <http://evil/g>",
        ),
        (
            READ,
            "query",
            f"PREFIX ex: <http://e/>\nSELECT * WHERE {{ BIND(ex:a\\#b AS ?x) SERVICE <{target}> {{ ?a ?b ?c }} }}",
        ),
    ]


@pytest.mark.parametrize("case", range(3))
def test_probe_reproductions_reach_nothing(hostile: LiveServer, listener: Listener, case: int) -> None:
    before = snapshot(hostile)
    token, kind, text = reproductions(listener.url("svc"))[case]
    response = sparql(hostile, token, kind, text)
    assert response.status_code == 403, response.text
    assert response.json()["error"] == "remote_access_refused"
    assert listener.contacts == []
    assert snapshot(hostile) == before  # the INSERT DATA before the LOAD was not applied either
    still_serving(hostile)


def test_no_port_scanning_oracle(hostile: LiveServer, listener: Listener) -> None:
    """An open port, a closed one and a name all give the same answer: nothing was tried."""
    closed = Listener()
    closed.close()
    targets = [listener.url("svc"), closed.url("svc"), "http://localhost:1/svc", "http://sparqlrag-test.invalid/svc"]
    answers = {
        sparql(hostile, READ, "query", f"SELECT * WHERE {{ SERVICE <{t}> {{ ?a ?b ?c }} }}").content for t in targets
    }
    assert len(answers) == 1 and b"remote_access_refused" in answers.pop()
    assert listener.contacts == []


def test_service_silent_runs_without_contact(hostile: LiveServer, listener: Listener) -> None:
    response = sparql(hostile, READ, "query", f"SELECT * WHERE {{ SERVICE SILENT <{listener.url()}> {{ ?a ?b ?c }} }}")
    assert response.status_code == 200, response.text
    assert listener.contacts == []


def test_in_process_store_is_sandboxed_too(tmp_path, listener: Listener) -> None:
    """The CLI's store (EmbeddedStore in the caller's process) runs SPARQL on filtered threads."""
    store = EmbeddedStore(tmp_path / "store")
    try:
        for _, kind, text in reproductions(listener.url("cli")):
            with pytest.raises(RemoteAccessRefused):
                store.query(text) if kind == "query" else store.update(text)
        assert store.count() == 0
    finally:
        store.close()
    assert listener.contacts == []


def test_without_a_sandbox_the_words_are_refused(tmp_path, listener: Listener, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the kernel cannot filter, any text that mentions SERVICE or LOAD is refused: cruder, still closed."""
    monkeypatch.setattr(sandbox, "offline_pool", lambda: None)
    store = EmbeddedStore(tmp_path / "store")
    try:
        for _, kind, text in reproductions(listener.url("fallback")):
            with pytest.raises(RemoteAccessRefused, match="cannot sandbox"):
                store.query(text) if kind == "query" else store.update(text)
        with pytest.raises(RemoteAccessRefused):
            store.query('SELECT * WHERE { ?s ?p "download" }')  # the price of not lexing
        assert store.query("ASK { }").body.endswith(b"true}")
    finally:
        store.close()
    assert listener.contacts == []


def test_allowed_remote_access_does_reach_out(tmp_path, listener: Listener) -> None:
    """The control: with allow_remote the same request contacts the listener, so the tests above can fail.
    The remote server's body is never shown."""
    store = EmbeddedStore(tmp_path / "store", allow_remote=True)
    try:
        _, _, text = reproductions(listener.url("allowed"))[0]
        with pytest.raises(Exception) as failure:
            store.query(text)
        assert Listener.SECRET.decode() not in str(failure.value)
    finally:
        store.close()
    assert len(listener.contacts) == 1 and listener.contacts[0].startswith(b"POST /allowed")
    listener.contacts.clear()
