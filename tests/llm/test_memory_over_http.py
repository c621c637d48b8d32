"""End to end: Memory → LLMExtractor → OpenAIChatModel → real SDK → local scripted server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memfold import Memory, MemoryConfig
from memfold.llm.base import ChatModelError
from memfold.llm.fake_server import FakeOpenAIServer, FakeReply


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
