"""The LLM clients: the real `anthropic` client (and httpx for OpenAI-compatible servers) against a
loopback stub of the Messages API. Only the model itself is stubbed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparqlrag.models.llm import AnthropicModel, LLMAuthError, LLMError, OpenAICompatibleModel, ResponseCache
from tests.llm_stub import MessagesStub, Reply, serve_stub


@pytest.fixture(scope="module")
def served() -> Iterator[MessagesStub]:
    stub, stop = serve_stub()
    yield stub
    stop()


@pytest.fixture
def stub(served: MessagesStub) -> MessagesStub:
    served.reset()
    return served


def claude(stub: MessagesStub, **kwargs: object) -> AnthropicModel:
    return AnthropicModel("claude-test", api_key="sk-test", base_url=stub.url, backoff=0.01, **kwargs)  # type: ignore[arg-type]


def openai(stub: MessagesStub, **kwargs: object) -> OpenAICompatibleModel:
    return OpenAICompatibleModel("local-model", base_url=stub.url + "/v1", backoff=0.01, **kwargs)  # type: ignore[arg-type]


def test_anthropic_plain_completion(stub: MessagesStub) -> None:
    stub.script(Reply("Paris is the capital of France.", input_tokens=21, output_tokens=9))
    model = claude(stub)
    completion = asyncio.run(model.complete("Capital of France?", system="Be brief.", max_tokens=64))
    assert completion.text == "Paris is the capital of France."
    assert (completion.input_tokens, completion.output_tokens, completion.cached) == (21, 9, False)
    (request,) = stub.requests
    assert request["model"] == "claude-test" and request["system"] == "Be brief." and request["max_tokens"] == 64
    assert request["messages"] == [{"role": "user", "content": "Capital of France?"}]
    assert (model.usage.calls, model.usage.input_tokens, model.usage.output_tokens) == (1, 21, 9)


def test_anthropic_stream(stub: MessagesStub) -> None:
    stub.script(Reply("A streamed answer, in several pieces.", output_tokens=8))
    model = claude(stub)

    async def collect() -> list[str]:
        return [piece async for piece in model.stream("Tell me")]

    pieces = asyncio.run(collect())
    assert len(pieces) > 3 and "".join(pieces) == "A streamed answer, in several pieces."
    assert stub.requests[0]["stream"] is True
    assert (model.usage.calls, model.usage.input_tokens, model.usage.output_tokens) == (1, 11, 8)


def test_rate_limit_then_success_is_retried(stub: MessagesStub) -> None:
    stub.script(
        Reply(status=429, error_type="rate_limit_error", headers={"retry-after": "0"}),
        Reply(status=529, error_type="overloaded_error"),
        Reply("finally"),
    )
    model = claude(stub)
    assert asyncio.run(model.complete("hi")).text == "finally"
    assert len(stub.requests) == 3 and model.usage.retries == 2


def test_stream_retries_before_any_text(stub: MessagesStub) -> None:
    stub.script(Reply(status=503, error_type="api_error"), Reply("after a retry"))
    model = claude(stub)

    async def collect() -> str:
        return "".join([piece async for piece in model.stream("hi")])

    assert asyncio.run(collect()) == "after a retry" and model.usage.retries == 1


@pytest.mark.parametrize("status,kind", [(401, "authentication_error"), (403, "permission_error")])
def test_auth_errors_are_never_retried(stub: MessagesStub, status: int, kind: str) -> None:
    stub.script(Reply(status=status, error_type=kind), Reply("must not be reached"))
    with pytest.raises(LLMAuthError, match=str(status)):
        asyncio.run(claude(stub).complete("hi"))
    assert len(stub.requests) == 1


def test_bad_request_and_quota_are_not_retried(stub: MessagesStub) -> None:
    stub.script(Reply(status=400, error_type="invalid_request_error"), Reply("must not be reached"))
    with pytest.raises(LLMError, match="anthropic:claude-test failed"):
        asyncio.run(claude(stub).complete("hi"))
    assert len(stub.requests) == 1


def test_retries_give_up_after_max(stub: MessagesStub) -> None:
    stub.script(*[Reply(status=500, error_type="api_error")] * 3)
    with pytest.raises(LLMError):
        asyncio.run(claude(stub, max_retries=2).complete("hi"))
    assert len(stub.requests) == 3


def test_missing_key_is_a_clear_error() -> None:
    with pytest.raises(LLMAuthError, match="ANTHROPIC_API_KEY"):
        AnthropicModel("claude-test", api_key=None)


def test_cache_answers_repeated_requests(stub: MessagesStub, tmp_path: Path) -> None:
    stub.script(Reply("first"), Reply("second"))
    model = claude(stub, cache=ResponseCache(tmp_path / "cache.sqlite"))

    async def twice() -> tuple[str, str, str]:
        a = await model.complete("same prompt")
        b = await model.complete("same prompt")
        c = await model.complete("other prompt")
        assert b.cached and not a.cached
        return a.text, b.text, c.text

    assert asyncio.run(twice()) == ("first", "first", "second")
    assert len(stub.requests) == 2 and model.usage.cache_hits == 1
    reopened = claude(stub, cache=ResponseCache(tmp_path / "cache.sqlite"))
    assert asyncio.run(reopened.complete("same prompt")).text == "first"  # persisted on disk
    assert len(stub.requests) == 2


def test_concurrency_is_bounded(stub: MessagesStub) -> None:
    stub.default = Reply("ok", delay=0.15)
    model = claude(stub, max_concurrency=2)

    async def many() -> list[str]:
        return [c.text for c in await asyncio.gather(*(model.complete(f"q{i}") for i in range(6)))]

    try:
        assert asyncio.run(many()) == ["ok"] * 6
    finally:
        stub.default = Reply("stub answer")
    assert stub.max_in_flight == 2


def test_openai_compatible_plain_stream_retry_and_auth(stub: MessagesStub) -> None:
    stub.script(
        Reply(status=429, headers={"retry-after": "0"}),
        Reply("plain answer", input_tokens=5, output_tokens=2),
        Reply("streamed answer"),
        Reply(status=401),
    )
    model = openai(stub)

    async def run() -> tuple[str, str]:
        plain = await model.complete("q", system="sys")
        streamed = "".join([piece async for piece in model.stream("q2")])
        with pytest.raises(LLMAuthError, match="401"):
            await model.complete("q3")
        return plain.text, streamed

    assert asyncio.run(run()) == ("plain answer", "streamed answer")
    assert stub.requests[1]["messages"][0] == {"role": "system", "content": "sys"}
    assert (model.usage.input_tokens, model.usage.output_tokens, model.usage.retries) == (5, 2, 1)
    assert len(stub.requests) == 4  # the 401 was not retried
