"""End to end: Memory → LLMExtractor → OpenAIChatModel → real SDK → local scripted server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memfold import Memory, MemoryConfig
from memfold.errors import ExtractionError
from memfold.llm.base import ChatModelError
from memfold.llm.fake_server import (
    FakeOpenAIServer,
    FakeReply,
    is_extraction_request,
    reject_json_schema_like_llama_cpp,
)


def fact(content: str, confidence: float = 0.95) -> dict[str, Any]:
    return {
        "content": content,
        "category": "context",
        "confidence": confidence,
        "sourceError": None,
        "scope": "user",
        "durability": "durable",
    }


def turn(user: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": "Noted."}]


@pytest.fixture
def memory(server: FakeOpenAIServer, tmp_path: Path) -> Iterator[Memory]:
    llm = {
        "provider": "openai",
        "model": "fake-model",
        "base_url": server.base_url,
        "api_key_env": None,
        "max_retries": 0,
        "timeout_seconds": 0.5,
    }
    config = MemoryConfig(home=tmp_path, llm=llm, extraction_timeout_seconds=0.5)
    with Memory(config) as mem:
        yield mem


def test_contradiction_leaves_exactly_the_new_fact(
    server: FakeOpenAIServer, memory: Memory
) -> None:
    server.script(
        FakeReply.text(json.dumps({"newFacts": [fact("Lives in Beijing")], "factsToRemove": []})),
        FakeReply.text(
            json.dumps(
                {
                    "newFacts": [fact("Lives in Shanghai")],
                    "factsToRemove": [{"ref": "f1", "reason": "moved", "replacedBy": 0}],
                }
            ),
            prompt_tokens=400,
            completion_tokens=60,
        ),
    )
    memory.update(turn("I live in Beijing."), thread_id="t1", user_id="alice")
    result = memory.update(turn("I moved to Shanghai."), thread_id="t2", user_id="alice")
    assert [f.content for f in memory.get(user_id="alice").facts] == ["Lives in Shanghai"]
    assert result.usage.prompt_tokens == 400
    assert "f1 [context 0.95] Lives in Beijing" in server.requests[1]["messages"][1]["content"]


def test_server_errors_leave_memory_untouched(server: FakeOpenAIServer, memory: Memory) -> None:
    server.script(FakeReply.error(500), FakeReply.malformed(), FakeReply.hang(5))
    for _ in range(3):
        with pytest.raises(ChatModelError):
            memory.update(turn("I use Go at work."), thread_id="t1", user_id="bob")
    assert memory.get(user_id="bob").facts == ()


def _documented_config(base_url: str, home: Path, **llm: Any) -> MemoryConfig:
    """The README's local-server config."""
    section = {"provider": "openai", "model": "local", "base_url": base_url, "api_key_env": None}
    return MemoryConfig(home=home, llm={**section, **llm})


def test_documented_local_config_learns_from_a_llama_cpp_like_server(tmp_path: Path) -> None:
    # local-models defect 1: llama-cpp-python answers json_schema with HTTP 500; 0.1.0
    # retried it as transient and learned nothing from any call
    with FakeOpenAIServer(handler=reject_json_schema_like_llama_cpp) as llama:
        llama.script(
            json.dumps({"newFacts": [fact("Works as a nurse")], "factsToRemove": []}),
            json.dumps({"newFacts": [fact("Lives in Oslo")], "factsToRemove": []}),
        )
        with Memory(_documented_config(llama.base_url, tmp_path)) as memory:
            memory.update(turn("I'm a nurse."), thread_id="t1", user_id="ana")
            memory.update(turn("I live in Oslo."), thread_id="t2", user_id="ana")
            facts = [f.content for f in memory.get(user_id="ana").facts]
        sent = llama.requests
    assert facts == ["Works as a nurse", "Lives in Oslo"]
    kinds = [(r["response_format"]["type"], "schema" in r["response_format"]) for r in sent]
    assert kinds == [("json_schema", False), ("json_object", True), ("json_object", True)]
    assert all(r["max_tokens"] == 1500 and r["temperature"] == 0 for r in sent)


def test_request_timeout_through_memory_names_llm_timeout_seconds(tmp_path: Path) -> None:
    # D13: 0.1.0 passed extraction_timeout_seconds to every request, overriding
    # llm.timeout_seconds, and the message always blamed llm.timeout_seconds
    with FakeOpenAIServer() as server:
        server.script(FakeReply.hang(10))
        config = _documented_config(server.base_url, tmp_path, timeout_seconds=0.3, max_retries=0)
        config = MemoryConfig.validated({**config.model_dump(), "extraction_timeout_seconds": 20})
        with Memory(config) as memory:
            start = time.monotonic()
            with pytest.raises(ChatModelError, match=r"llm\.timeout_seconds=0\.3s"):
                memory.update(turn("I use Go."), thread_id="t1", user_id="bo")
            assert time.monotonic() - start < 3


def test_extraction_budget_through_memory_names_extraction_timeout_seconds(
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer() as server:
        server.script(FakeReply.hang(10))
        config = _documented_config(server.base_url, tmp_path, timeout_seconds=10)
        config = MemoryConfig.validated({**config.model_dump(), "extraction_timeout_seconds": 0.4})
        with Memory(config) as memory:
            start = time.monotonic()
            with pytest.raises(ChatModelError, match="raise extraction_timeout_seconds"):
                memory.update(turn("I use Go."), thread_id="t1", user_id="bo")
            assert time.monotonic() - start < 3


def test_a_handler_tells_the_agents_calls_from_memfolds_extraction_calls(tmp_path: Path) -> None:
    # Polish 17: with one FIFO script for all requests the agent consumed the extraction
    # reply and memory got "Sure."
    def answer(request: dict[str, Any]) -> str:
        if is_extraction_request(request):
            return json.dumps({"newFacts": [fact("Works as a nurse")], "factsToRemove": []})
        return "Sure."

    with FakeOpenAIServer(handler=answer) as server:
        from memfold.llm.base import ChatMessage
        from memfold.llm.openai import OpenAIChatModel

        with OpenAIChatModel("agent", base_url=server.base_url, api_key_env=None) as agent:
            said = agent.complete([ChatMessage("user", "I'm a nurse.")], timeout=2).text
        with Memory(_documented_config(server.base_url, tmp_path)) as memory:
            memory.update(
                [("user", "I'm a nurse."), ("assistant", said)], thread_id="t", user_id="ana"
            )
            facts = [f.content for f in memory.get(user_id="ana").facts]
        assert server.pending == 0
    assert said == "Sure."
    assert facts == ["Works as a nurse"]


def test_a_broken_handler_is_a_visible_server_error(tmp_path: Path) -> None:
    def broken(request: dict[str, Any]) -> str:
        raise RuntimeError("oops")

    with FakeOpenAIServer(handler=broken) as server:
        from memfold.llm.base import ChatMessage
        from memfold.llm.openai import OpenAIChatModel

        with (
            OpenAIChatModel("m", base_url=server.base_url, api_key_env=None, max_retries=0) as chat,
            pytest.raises(ChatModelError, match="handler raised RuntimeError: oops"),
        ):
            chat.complete([ChatMessage("user", "hi")], timeout=2)


def test_usage_of_a_reply_without_text_is_counted(server: FakeOpenAIServer, memory: Memory) -> None:
    server.script(FakeReply.text(None, prompt_tokens=50, completion_tokens=3))
    with pytest.raises(ChatModelError, match="no text"):
        memory.update(turn("I use Go."), thread_id="t1", user_id="bo")
    status = memory.status()
    assert (status.prompt_tokens, status.completion_tokens) == (50, 3)


def test_usage_of_an_unparsable_reply_is_counted(server: FakeOpenAIServer, memory: Memory) -> None:
    server.script(FakeReply.text("I can't do JSON today.", prompt_tokens=900, completion_tokens=8))
    with pytest.raises(ExtractionError):
        memory.update(turn("I use Go."), thread_id="t1", user_id="bo")
    assert memory.status().prompt_tokens == 900
