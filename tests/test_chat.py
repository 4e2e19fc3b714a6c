"""The OpenAI-compatible chat API with the official `openai` client against a real server: models
per token, a cited answer whole and streamed, refusals in OpenAI's shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from tests.conftest import LiveServer, start_server
from tests.llm_stub import MessagesStub, Reply, serve_stub

ADMIN, ALPHA = "admin-key", "alpha-key"
DOCS = {
    "kvitoy": "The Kvitøy wind farm stands on the island of Kvitøy. Nordic Turbines built its turbines in 2019.",
    "harbour-park": "Who built its turbines? Baltic Works built its turbines, the Harbour wind park's turbines.",
    "bakery": "Quay Bakery sells bread on the quay. Ole Hansen owns Quay Bakery.",
}
BAKERY = "Who owns Quay Bakery?"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live, stop = start_server(
        tmp_path_factory.mktemp("chat"),
        own_base_iri=True,
        write_tokens=[ADMIN],
        collection_tokens={ALPHA: ["read:alpha"]},
        answer_rate=0,
    )
    with live.client(ADMIN) as client:
        assert client.post("/api/v1/collections", json={"name": "alpha"}).status_code == 201
        for document_id, text in DOCS.items():
            body = {"id": document_id, "text": text, "title": document_id.capitalize()}
            assert client.post("/api/v1/documents", json=body).status_code == 201
        alpha = {"id": "alpha-notes", "text": "Alpha notes: the alpha team meets on Mondays.", "title": "Alpha notes"}
        assert client.post("/api/v1/documents?collection=alpha", json=alpha).status_code == 201
    yield live
    stop()


def _client(server: LiveServer, key: str = ADMIN) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0)


def test_models_are_the_collections_a_key_may_read(server: LiveServer) -> None:
    assert sorted(m.id for m in _client(server).models.list()) == ["alpha", "default"]
    assert [m.id for m in _client(server, ALPHA).models.list()] == ["alpha"]
    assert _client(server).models.retrieve("default").id == "default"
    with pytest.raises(openai.NotFoundError):
        _client(server, ALPHA).models.retrieve("default")


def test_a_cited_answer_whole_and_streamed_say_the_same(server: LiveServer) -> None:
    client = _client(server)
    asked: list[ChatCompletionMessageParam] = [{"role": "user", "content": BAKERY}]
    whole = client.chat.completions.create(model="default", messages=asked, temperature=0.2, max_tokens=300)
    text = whole.choices[0].message.content or ""
    assert "Ole Hansen" in text and "[1]" in text
    assert "**Sources**" in text and f"]({server.settings.base_iri}file/doc/default/bakery)" in text
    assert f"[How this answer was found]({server.settings.base_iri}trace/default/" in text
    assert whole.usage is not None and whole.usage.total_tokens > 0 and whole.choices[0].finish_reason == "stop"
    chunks = list(client.chat.completions.create(model="default", messages=asked, stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed.split("[How this answer was found]")[0] == text.split("[How this answer was found]")[0]
    assert chunks[0].choices[0].delta.role == "assistant" and chunks[-1].choices[0].finish_reason == "stop"
    assert len({c.id for c in chunks}) == 1 and len(chunks) > 3


def test_a_collection_key_answers_from_its_collection_alone(server: LiveServer) -> None:
    client = _client(server, ALPHA)
    answer = client.chat.completions.create(
        model="alpha", messages=[{"role": "user", "content": "When does the team meet?"}]
    )
    assert "Mondays" in (answer.choices[0].message.content or "")
    with pytest.raises(openai.NotFoundError) as refused:
        client.chat.completions.create(model="default", messages=[{"role": "user", "content": "Who owns Quay Bakery?"}])
    assert refused.value.body["code"] == "model_not_found"  # type: ignore[index]


def test_a_wrong_key_is_a_401(server: LiveServer) -> None:
    with pytest.raises(openai.AuthenticationError) as refused:
        _client(server, "wrong").models.list()
    assert refused.value.body["type"] == "authentication_error"  # type: ignore[index]


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"messages": [{"role": "user", "content": "hi"}], "n": 2}, 400, "n must be"),
        ({"messages": [{"role": "assistant", "content": "hi"}]}, 400, "the last message must be the user's"),
        ({"messages": [{"role": "wizard", "content": "hi"}]}, 400, "messages.0.role"),
        ({"messages": []}, 400, "messages"),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}
                ]
            },
            400,
            "text",
        ),
        ({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "required"}, 400, "tools are not supported"),
        ({"messages": [{"role": "user", "content": "why " * 9000}]}, 413, "the limit is 32000"),
        ({"messages": [{"role": "user", "content": "hi"}] * 65}, 413, "the limit is 64"),
    ],
)
def test_bad_input_is_refused_in_openais_shape(
    server: LiveServer, body: dict[str, object], status: int, words: str
) -> None:
    before = server.dataset(ADMIN)
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60) as client:
        response = client.post("/v1/chat/completions", json={"model": "default", **body})
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert words in error["message"] and error["type"] == "invalid_request_error" and error["code"]
    assert server.dataset(ADMIN) == before


def test_a_follow_up_is_answered_from_the_conversation(server: LiveServer) -> None:
    """Offline, the names of the earlier turns carry into grounding and search: "its" is the
    Kvitøy wind farm's, not the harbour park's; the trace records the turn and what was carried."""
    conversation: list[ChatCompletionMessageParam] = [
        {"role": "user", "content": "Tell me about the Kvitøy wind farm"},
        {"role": "assistant", "content": "The Kvitøy wind farm stands on the island of Kvitøy."},
        {"role": "user", "content": "Who built its turbines?"},
    ]
    answer = _client(server).chat.completions.create(model="default", messages=conversation)
    text = answer.choices[0].message.content or ""
    first = text.split("**Sources**")[1].split("](", 1)[1].split(")", 1)[0]
    assert "Nordic Turbines" in text and first.endswith("/file/doc/default/kvitoy"), text
    trace_iri = text.rsplit("[How this answer was found](", 1)[1].split(")", 1)[0]
    with server.client(ADMIN) as client:
        trace = client.get(f"/api/v1/traces/{trace_iri.rsplit('/', 1)[1]}").json()
    assert trace["asked_as"] == "Who built its turbines?" and trace["turn"] == 2 and trace["carried"] == ["Kvitøy"]
    assert trace["question"] == "Who built its turbines? (Kvitøy)"
    alone = _client(server).chat.completions.create(model="default", messages=conversation[-1:])
    said = alone.choices[0].message.content or ""
    assert not said.split("**Sources**")[1].split(")", 1)[0].endswith("/kvitoy"), said  # alone, "its" is anyone's


@pytest.fixture(scope="module")
def with_llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, MessagesStub]]:
    stub, stop_stub = serve_stub()
    live, stop = start_server(
        tmp_path_factory.mktemp("chat-llm"),
        own_base_iri=True,
        llm="anthropic",
        llm_base_url=stub.url,
        llm_api_key="sk-test",
        extractor="offline",
        answer_rate=0,
    )
    with live.client() as client:
        for document_id, text in DOCS.items():
            assert client.post("/api/v1/documents", json={"id": document_id, "text": text}).status_code == 201
    yield live, stub
    stop()
    stop_stub()


def test_with_an_llm_the_follow_up_is_rewritten_and_its_tokens_stream_through(
    with_llm: tuple[LiveServer, MessagesStub],
) -> None:
    server, stub = with_llm
    stub.reset()
    rewritten = "Who built the turbines of the Kvitøy wind farm?"
    stub.script(Reply(rewritten, input_tokens=40, output_tokens=12))
    stub.default = Reply("Nordic Turbines built them in 2019 [1].")
    conversation: list[ChatCompletionMessageParam] = [
        {"role": "user", "content": "Tell me about the Kvitøy wind farm"},
        {"role": "assistant", "content": "It stands on the island of Kvitøy."},
        {"role": "user", "content": "Who built its turbines?"},
    ]
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    chunks = list(client.chat.completions.create(model="default", messages=conversation, stream=True))
    first = stub.requests[0]["messages"][0]["content"]
    assert "Tell me about the Kvitøy wind farm" in first and "Who built its turbines?" in first  # the rewrite, sent
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(pieces).startswith("Nordic Turbines built them in 2019 [1].")
    assert len(pieces) > 8  # the model's pieces, passed through as they came (the stub sends 5 characters at a time)
    trace_iri = "".join(pieces).rsplit("[How this answer was found](", 1)[1].split(")", 1)[0]
    with server.client() as http:
        trace = http.get(f"/api/v1/traces/{trace_iri.rsplit('/', 1)[1]}").json()
    assert trace["question"] == rewritten and trace["asked_as"] == "Who built its turbines?" and trace["turn"] == 2
    assert trace["input_tokens"] >= 40 and trace["carried"] == []  # the rewrite's tokens are the answer's too


def test_the_ollama_pair_lists_the_models_and_answers_whole_and_streamed(server: LiveServer) -> None:
    headers = {"Authorization": f"Bearer {ALPHA}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as client:
        assert [m["name"] for m in client.get("/api/tags").json()["models"]] == ["alpha"]
        asked = {"model": "alpha", "messages": [{"role": "user", "content": "When does the team meet?"}]}
        whole = client.post("/api/chat", json=asked | {"stream": False}).json()
        assert (
            whole["done"] and "Mondays" in whole["message"]["content"] and "**Sources**" in whole["message"]["content"]
        )
        with client.stream("POST", "/api/chat", json=asked) as response:  # (Ollama streams unless told not to)
            assert response.headers["content-type"].startswith("application/x-ndjson")
            lines = [json.loads(line) for line in response.iter_lines() if line]
        assert lines[-1]["done"] and not any(line["done"] for line in lines[:-1])
        streamed = "".join(line["message"]["content"] for line in lines)
        assert streamed.split("[How this answer was found]")[0] == whole["message"]["content"].split("[How this")[0]
        before = server.dataset(ADMIN)
        refused = client.post("/api/chat", json={"model": "default", "messages": asked["messages"]})
        assert refused.status_code == 404 and "error" in refused.json() and isinstance(refused.json()["error"], str)
        image = {"role": "user", "content": "What is this?", "images": ["aGVsbG8="]}
        unread = client.post("/api/chat", json={"model": "alpha", "messages": [image]})
        assert unread.status_code == 400 and "images are not read" in unread.json()["error"]
        assert server.dataset(ADMIN) == before
    assert httpx.get(server.url + "/api/tags").status_code == 401


def test_a_chat_question_counts_against_the_answer_rate(tmp_path: Path) -> None:
    live, stop = start_server(tmp_path, answer_rate=1)
    try:
        client = _client(live, "unused")
        asked: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Anything?"}]
        client.chat.completions.create(model="default", messages=asked)
        with pytest.raises(openai.RateLimitError) as refused:
            client.chat.completions.create(model="default", messages=asked)
        assert refused.value.body["type"] == "rate_limit_exceeded"  # type: ignore[index]
    finally:
        stop()
