"""The OpenAI-compatible adapter, through the real SDK against a local scripted server."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator

import pytest

from memfold.errors import ConfigError
from memfold.extract.base import ExtractionRequest, Usage
from memfold.extract.llm import LLMExtractor
from memfold.llm.base import ChatMessage, ChatModel, ChatModelError
from memfold.llm.fake_server import (
    FakeOpenAIServer,
    FakeReply,
    reject_json_schema_like_llama_cpp,
)
from memfold.llm.openai import OpenAIChatModel
from memfold.model import Message, empty_document

HELLO = [ChatMessage("system", "Be brief."), ChatMessage("user", "hi")]
SCHEMA = {"type": "object"}
RETRY_SOON = (("retry-after-ms", "10"),)


@pytest.fixture
def model(server: FakeOpenAIServer) -> Iterator[OpenAIChatModel]:
    with OpenAIChatModel(
        "fake-model", base_url=server.base_url, api_key_env=None, timeout=0.5, max_retries=0
    ) as chat:
        yield chat


def test_is_a_chat_model(model: OpenAIChatModel) -> None:
    assert isinstance(model, ChatModel)


def test_reply_text_and_usage_come_back(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    server.script(FakeReply.text("hello", prompt_tokens=12, completion_tokens=3))
    completion = model.complete(HELLO, timeout=0.5)
    assert completion.text == "hello"
    assert completion.usage == Usage(12, 3)
    sent = server.requests[0]
    assert sent["model"] == "fake-model"
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    assert sent["temperature"] == 0
    assert sent["response_format"] == {"type": "json_object"}


def test_schema_is_sent_as_structured_output(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script("{}")
    model.complete(HELLO, json_schema=SCHEMA, timeout=0.5)
    sent = server.requests[0]["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["schema"] == SCHEMA


def test_list_of_parts_content_is_flattened(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(FakeReply.text([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]))
    assert model.complete(HELLO, timeout=0.5).text == "ab"


def test_missing_usage_is_none(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    server.script(FakeReply.text("x", prompt_tokens=None))
    assert model.complete(HELLO, timeout=0.5).usage is None


def _formats(server: FakeOpenAIServer) -> list[object]:
    return [r.get("response_format") for r in server.requests]


GRAMMAR = {"type": "json_object", "schema": SCHEMA}
STRUCTURED = {"type": "json_schema", "json_schema": {"name": "memfold_reply", "schema": SCHEMA}}


def test_rejected_json_mode_falls_back_and_is_remembered() -> None:
    with FakeOpenAIServer(reject_response_format=True) as strict:
        with OpenAIChatModel(
            "m", base_url=strict.base_url, api_key_env=None, timeout=0.5, max_retries=0
        ) as chat:
            strict.script("first", "second")
            assert chat.complete(HELLO, json_schema=SCHEMA, timeout=0.5).text == "first"
            assert chat.json_mode_disabled
            assert chat.negotiated_mode == "text"
            assert chat.complete(HELLO, json_schema=SCHEMA, timeout=0.5).text == "second"
        formats = _formats(strict)
    # json_schema, llama.cpp's json_object + schema, json_object, then plain text; the next
    # call goes plain at once
    assert formats == [STRUCTURED, GRAMMAR, {"type": "json_object"}, None, None]
    # in plain text the schema is in the prompt instead
    system = strict.requests[-1]["messages"][0]["content"]
    assert system.startswith("Be brief.")
    assert json.dumps(SCHEMA, separators=(",", ":")) in system


def test_llama_cpp_500_on_json_schema_negotiates_the_grammar_form() -> None:
    # 0.1.0 took llama-cpp-python's HTTP 500 for a transient error, retried json_schema and
    # failed every call (local-models defect 1)
    with (
        FakeOpenAIServer(handler=reject_json_schema_like_llama_cpp) as llama,
        OpenAIChatModel("m", base_url=llama.base_url, api_key_env=None, max_retries=2) as chat,
    ):
        llama.script("one", "two")
        assert chat.complete(HELLO, json_schema=SCHEMA, timeout=2).text == "one"
        assert chat.negotiated_mode == "json_object_schema"
        assert chat.complete(HELLO, json_schema=SCHEMA, timeout=2).text == "two"
        assert _formats(llama) == [STRUCTURED, GRAMMAR, GRAMMAR]


def test_negotiated_mode_is_shared_by_every_client_of_the_server_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="memfold.llm")
    with FakeOpenAIServer(handler=reject_json_schema_like_llama_cpp) as llama:
        llama.script("a", "b")
        for expected in ("a", "b"):
            with OpenAIChatModel("m", base_url=llama.base_url, api_key_env=None) as chat:
                assert chat.complete(HELLO, json_schema=SCHEMA, timeout=2).text == expected
        assert _formats(llama) == [STRUCTURED, GRAMMAR, GRAMMAR]
    using = [r for r in caplog.records if "using response format" in r.getMessage()]
    assert len(using) == 1
    assert "json_object_schema" in using[0].getMessage()


def test_a_genuine_server_error_is_still_retried_in_the_same_mode(
    server: FakeOpenAIServer,
) -> None:
    busy = FakeReply(status=500, body='{"error": {"message": "out of memory"}}', headers=RETRY_SOON)
    server.script(busy, "after the retry")
    with OpenAIChatModel("m", base_url=server.base_url, api_key_env=None, max_retries=1) as chat:
        assert chat.complete(HELLO, json_schema=SCHEMA, timeout=2).text == "after the retry"
    assert _formats(server) == [STRUCTURED, STRUCTURED]


def test_pinned_response_format_is_sent_without_negotiating(server: FakeOpenAIServer) -> None:
    server.script("x", FakeReply.error(400, "response_format is not supported"))
    with OpenAIChatModel(
        "m", base_url=server.base_url, api_key_env=None, response_format="json_object_schema",
        max_retries=0,
    ) as chat:  # fmt: skip
        chat.complete(HELLO, json_schema=SCHEMA, timeout=0.5)
        with pytest.raises(ChatModelError, match="response_format=json_object_schema is pinned"):
            chat.complete(HELLO, json_schema=SCHEMA, timeout=0.5)
    assert _formats(server) == [GRAMMAR, GRAMMAR]


def test_max_tokens_and_temperature_are_sent_with_every_request(
    server: FakeOpenAIServer,
) -> None:
    server.script("x", "y")
    with OpenAIChatModel(
        "m", base_url=server.base_url, api_key_env=None, temperature=0.3, max_output_tokens=321
    ) as chat:
        chat.complete(HELLO, json_schema=SCHEMA, timeout=0.5)
        chat.complete(HELLO, timeout=0.5)
    assert [(r["max_tokens"], r["temperature"]) for r in server.requests] == [(321, 0.3)] * 2


def test_server_refusing_max_tokens_gets_max_completion_tokens(server: FakeOpenAIServer) -> None:
    refusal = (
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead."
    )
    server.script(FakeReply.error(400, refusal), "ok", "again")
    with OpenAIChatModel("m", base_url=server.base_url, api_key_env=None) as chat:
        assert chat.complete(HELLO, json_schema=SCHEMA, timeout=0.5).text == "ok"
        assert chat.complete(HELLO, json_schema=SCHEMA, timeout=0.5).text == "again"
    first, second, third = server.requests
    assert "max_tokens" in first
    assert "max_completion_tokens" not in first
    assert second["max_completion_tokens"] == third["max_completion_tokens"] == 1500
    assert _formats(server) == [STRUCTURED] * 3


def test_json_mode_off_never_sends_response_format(server: FakeOpenAIServer) -> None:
    server.script("x")
    with OpenAIChatModel(
        "m", base_url=server.base_url, api_key_env=None, json_mode="off", max_retries=0
    ) as chat:
        chat.complete(HELLO, json_schema=SCHEMA, timeout=0.5)
    assert "response_format" not in server.requests[0]


def test_json_mode_on_does_not_fall_back() -> None:
    with (
        FakeOpenAIServer(reject_response_format=True) as strict,
        OpenAIChatModel(
            "m", base_url=strict.base_url, api_key_env=None, json_mode="on", max_retries=0
        ) as chat,
        pytest.raises(ChatModelError, match="HTTP 400") as info,
    ):
        chat.complete(HELLO, timeout=0.5)
    assert info.value.status == 400
    assert not info.value.retryable


def test_rate_limit_is_a_retryable_chat_model_error(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(FakeReply.error(429, "slow down"))
    with pytest.raises(ChatModelError, match="429") as info:
        model.complete(HELLO, timeout=0.5)
    assert info.value.retryable


def test_sdk_retries_a_rate_limit_then_succeeds(server: FakeOpenAIServer) -> None:
    server.script(FakeReply.error(429), "after the wait")
    with OpenAIChatModel("m", base_url=server.base_url, api_key_env=None, max_retries=1) as chat:
        assert chat.complete(HELLO, timeout=0.5).text == "after the wait"
    assert len(server.requests) == 2


def test_server_error_is_a_retryable_chat_model_error(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(FakeReply.error(500, "boom"))
    with pytest.raises(ChatModelError, match=r"HTTP 500.*boom") as info:
        model.complete(HELLO, timeout=0.5)
    assert info.value.status == 500
    assert info.value.retryable


def test_hang_past_the_timeout_is_a_chat_model_error(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(FakeReply.hang(10))
    with pytest.raises(ChatModelError, match="timeout"):
        model.complete(HELLO, timeout=0.3)


def test_malformed_body_is_a_chat_model_error(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(FakeReply.malformed())
    with pytest.raises(ChatModelError, match="not valid JSON"):
        model.complete(HELLO, timeout=0.5)


def test_reply_without_text_is_a_chat_model_error(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(FakeReply.text(None))
    with pytest.raises(ChatModelError, match="no text"):
        model.complete(HELLO, timeout=0.5)


def test_unreachable_server_is_a_chat_model_error() -> None:
    with FakeOpenAIServer() as gone:
        url = gone.base_url
    with (
        OpenAIChatModel("m", base_url=url, api_key_env=None, max_retries=0) as chat,
        pytest.raises(ChatModelError, match="cannot connect"),
    ):
        chat.complete(HELLO, timeout=0.5)


def test_missing_key_variable_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match="MEMFOLD_TEST_KEY") as info:
        OpenAIChatModel("m", api_key_env="MEMFOLD_TEST_KEY", environ={})
    assert info.value.key == "llm.api_key_env"


def test_key_is_sent_but_never_logged(
    server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-test-0123456789abcdef"
    server.script(FakeReply.error(401, "invalid key"))
    caplog.set_level(logging.DEBUG)
    with OpenAIChatModel(
        "m", base_url=server.base_url, environ={"K": secret}, api_key_env="K", max_retries=0
    ) as chat:
        with pytest.raises(ChatModelError) as info:
            chat.complete(HELLO, timeout=0.5)
        assert secret not in repr(chat)
    assert not info.value.retryable
    assert secret not in str(info.value)
    assert secret not in caplog.text


def test_extractor_runs_end_to_end_over_http(server: FakeOpenAIServer) -> None:
    answer = {
        "newFacts": [
            {
                "content": "Prefers Python",
                "category": "preference",
                "confidence": 92,
                "scope": "user",
                "durability": "durable",
            }
        ],
        "factsToRemove": [],
    }
    server.script(FakeReply.text("```json\n" + json.dumps(answer) + "\n```", prompt_tokens=321))
    with OpenAIChatModel("m", base_url=server.base_url, api_key_env=None, max_retries=0) as chat:
        extraction = LLMExtractor(chat, timeout=2).propose(
            ExtractionRequest(
                empty_document(),
                (Message("user", "I always use Python"), Message("assistant", "Noted")),
            )
        )
    assert [(f.content, f.confidence) for f in extraction.change_set.new_facts] == [
        ("Prefers Python", 0.92)
    ]
    assert extraction.usage == Usage(321, 5)
    assert server.requests[0]["response_format"]["type"] == "json_schema"


def test_retries_never_outlast_the_call_timeout(server: FakeOpenAIServer) -> None:
    server.script(FakeReply.hang(10), FakeReply.hang(10), FakeReply.hang(10))
    with OpenAIChatModel("m", base_url=server.base_url, api_key_env=None, max_retries=2) as chat:
        start = time.monotonic()
        with pytest.raises(ChatModelError, match="timeout"):
            chat.complete(HELLO, timeout=0.3)
        elapsed = time.monotonic() - start
    assert elapsed < 1.0
    assert len(server.requests) == 1


def test_server_error_is_retried_within_max_retries(server: FakeOpenAIServer) -> None:
    busy = FakeReply(status=503, body='{"error": {"message": "busy"}}', headers=RETRY_SOON)
    server.script(busy, "after the retry")
    with OpenAIChatModel("m", base_url=server.base_url, api_key_env=None, max_retries=1) as chat:
        assert chat.complete(HELLO, timeout=2).text == "after the retry"
    assert len(server.requests) == 2


def test_retry_the_deadline_cannot_wait_for_is_not_attempted(server: FakeOpenAIServer) -> None:
    slow = FakeReply(status=429, body="{}", headers=(("retry-after", "30"),))
    server.script(slow, "too late")
    with (
        OpenAIChatModel("m", base_url=server.base_url, api_key_env=None, max_retries=3) as chat,
        pytest.raises(ChatModelError, match="429"),
    ):
        chat.complete(HELLO, timeout=1)
    assert len(server.requests) == 1


def test_bad_request_in_every_mode_raises_it_and_remembers_nothing(
    server: FakeOpenAIServer,
) -> None:
    too_long = FakeReply.error(400, "This model's maximum context length is 8192 tokens.")
    server.script(*[too_long] * 4, "fits now")
    with OpenAIChatModel("m", base_url=server.base_url, api_key_env=None, max_retries=0) as chat:
        with pytest.raises(ChatModelError, match=r"HTTP 400.*maximum context length"):
            chat.complete(HELLO, json_schema=SCHEMA, timeout=0.5)
        assert chat.complete(HELLO, json_schema=SCHEMA, timeout=0.5).text == "fits now"
        assert not chat.json_mode_disabled
        assert chat.negotiated_mode == "json_schema"
    assert _formats(server) == [STRUCTURED, GRAMMAR, {"type": "json_object"}, None, STRUCTURED]


def test_bare_4xx_rejection_is_remembered_once_a_weaker_mode_works(
    server: FakeOpenAIServer,
) -> None:
    server.script(FakeReply.error(422, "Unprocessable Entity"), "grammar works", "again")
    with OpenAIChatModel("m", base_url=server.base_url, api_key_env=None, max_retries=0) as chat:
        assert chat.complete(HELLO, json_schema=SCHEMA, timeout=0.5).text == "grammar works"
        assert chat.complete(HELLO, json_schema=SCHEMA, timeout=0.5).text == "again"
    assert _formats(server) == [STRUCTURED, GRAMMAR, GRAMMAR]


@pytest.mark.parametrize("status", [401, 403, 404, 429])
def test_auth_unknown_model_and_rate_limits_are_not_format_rejections(
    server: FakeOpenAIServer, status: int
) -> None:
    server.script(FakeReply.error(status, "response_format whatever"))
    with (
        OpenAIChatModel("m", base_url=server.base_url, api_key_env=None, max_retries=0) as chat,
        pytest.raises(ChatModelError, match=f"HTTP {status}|{status}"),
    ):
        chat.complete(HELLO, json_schema=SCHEMA, timeout=0.5)
    assert _formats(server) == [STRUCTURED]


def test_request_timeout_names_llm_timeout_seconds(server: FakeOpenAIServer) -> None:
    # D13/S5: 0.1.0 let extraction_timeout_seconds override llm.timeout_seconds and always
    # blamed llm.timeout_seconds
    server.script(FakeReply.hang(10))
    with OpenAIChatModel(
        "m", base_url=server.base_url, api_key_env=None, timeout=0.3, max_retries=0
    ) as chat:
        start = time.monotonic()
        with pytest.raises(ChatModelError, match=r"llm\.timeout_seconds=0\.3s") as info:
            chat.complete(HELLO, timeout=5)
    assert time.monotonic() - start < 2
    assert "extraction_timeout_seconds" not in str(info.value)


def test_call_budget_timeout_names_extraction_timeout_seconds(server: FakeOpenAIServer) -> None:
    server.script(FakeReply.hang(10))
    with OpenAIChatModel(
        "m", base_url=server.base_url, api_key_env=None, timeout=10, max_retries=0
    ) as chat:
        start = time.monotonic()
        with pytest.raises(ChatModelError, match="raise extraction_timeout_seconds"):
            chat.complete(HELLO, timeout=0.3)
    assert time.monotonic() - start < 2


def test_a_request_that_timed_out_is_retried_within_the_call_budget(
    server: FakeOpenAIServer,
) -> None:
    server.script(FakeReply.hang(10), "second try")
    with OpenAIChatModel(
        "m", base_url=server.base_url, api_key_env=None, timeout=0.3, max_retries=1
    ) as chat:
        assert chat.complete(HELLO, timeout=5).text == "second try"
    assert len(server.requests) == 2


def test_reply_cut_at_the_token_limit_is_marked_truncated(server: FakeOpenAIServer) -> None:
    cut = json.loads(FakeReply.text('{"newFacts": [').body)
    cut["choices"][0]["finish_reason"] = "length"
    server.script(FakeReply(body=json.dumps(cut)))
    with OpenAIChatModel("m", base_url=server.base_url, api_key_env=None) as chat:
        assert chat.complete(HELLO, timeout=0.5).truncated


def test_json_mode_and_response_format_must_agree() -> None:
    with pytest.raises(ValueError, match="contradicts"):
        OpenAIChatModel("m", api_key_env=None, json_mode="off", response_format="json_schema")
    with pytest.raises(ValueError, match="response_format='yaml'"):
        OpenAIChatModel("m", api_key_env=None, response_format="yaml")  # type: ignore[arg-type]


def test_json_mode_reads_back_from_response_format() -> None:
    assert OpenAIChatModel("m", api_key_env=None).json_mode == "auto"
    assert OpenAIChatModel("m", api_key_env=None, json_mode="off").json_mode == "off"
    assert OpenAIChatModel("m", api_key_env=None, response_format="json_object").json_mode == "on"
