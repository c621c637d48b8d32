"""Long threads are learned in bounded, ordered chunks (finding D4).

A thread's new turns used to go into one request: 100,000 messages made a 2-million-token
prompt that every provider refuses, the job was dropped and the thread never learned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from memfold import Memory, MemoryConfig
from memfold.errors import ExtractionError
from memfold.llm.base import ChatMessage, Completion
from memfold.testing import InMemoryStore
from memfold.tokens import get_counter

BOUND = 24_000  # the default max_extraction_input_tokens


class CountingModel:
    """Replies with one fact per "I have pet number N" turn, and records each prompt's
    size in tokens (the same counter memfold bounds it with)."""

    def __init__(self, fail_on_call: int | None = None) -> None:
        self.count = get_counter("cl100k_base").count
        self.sizes: list[int] = []
        self.first_turns: list[str] = []
        self.fail_on_call = fail_on_call

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        self.sizes.append(sum(self.count(m.content) + 4 for m in messages))
        user = messages[-1].content
        turns = re.findall(r"<user>(.*?)</user>", user)
        self.first_turns.append(turns[0] if turns else "")
        if self.fail_on_call == len(self.sizes):
            raise ExtractionError("the provider fell over")
        pets = re.findall(r"<user>I have pet number (\d+)</user>", user)
        facts = [
            {
                "content": f"Has pet number {n}",
                "category": "context",
                "confidence": 0.9,
                "scope": "user",
                "durability": "durable",
            }
            for n in pets
        ]
        return Completion(json.dumps({"newFacts": facts, "factsToRemove": []}))


def thread(messages: int) -> list[dict[str, str]]:
    out = []
    for i in range(messages // 2):
        text = f"I have pet number {i}" if i % 1_000 == 0 else f"Here is note {i} of my log"
        out.append({"role": "user", "content": text, "id": f"u{i}"})
        out.append({"role": "assistant", "content": f"Noted {i}", "id": f"a{i}"})
    return out


def memory(model: CountingModel, **options: Any) -> Memory:
    # the gate is off: these threads are about chunking, most of their turns hold nothing
    options.setdefault("extraction_gate", False)
    config = MemoryConfig(extractor="llm", llm={"model": "m"}, max_facts=1_000, **options)
    return Memory(config, store=InMemoryStore(), chat_model=model, start_workers=False)


def test_a_100000_message_thread_is_learned_completely_in_bounded_requests() -> None:
    model = CountingModel()
    with memory(model) as mem:
        result = mem.update(thread(100_000), thread_id="long", user_id="u")
        doc = mem.get(user_id="u")
    assert result.committed
    assert result.requests == len(model.sizes) > 10
    assert max(model.sizes) <= BOUND
    assert {f.content for f in doc.facts} == {
        f"Has pet number {n}" for n in range(0, 50_000, 1_000)
    }
    assert doc.watermarks["long"].message_key == "id:a49999"
    # ordered chunks: each starts right after the previous one ended
    starts = [int(re.findall(r"\d+", turn)[0]) for turn in model.first_turns]
    assert starts == sorted(starts)
    assert starts[0] == 0


def test_a_failed_chunk_resumes_after_the_last_committed_one() -> None:
    model = CountingModel(fail_on_call=3)
    messages = thread(6_000)
    with memory(model, max_extraction_input_tokens=4_000) as mem:
        with pytest.raises(ExtractionError):
            mem.update(messages, thread_id="t", user_id="u")
        calls_before = len(model.sizes)
        resumed_at = mem.get(user_id="u").watermarks["t"].message_key
        assert resumed_at.startswith("id:a")
        model.fail_on_call = None
        result = mem.update(messages, thread_id="t", user_id="u")
        doc = mem.get(user_id="u")
    assert max(model.sizes) <= 4_000
    # the retry started with the chunk that failed, not with the thread's first turn
    assert model.first_turns[calls_before] == model.first_turns[calls_before - 1]
    assert result.committed
    assert {f.content for f in doc.facts} == {f"Has pet number {n}" for n in (0, 1_000, 2_000)}
    assert doc.watermarks["t"].message_key == "id:a2999"


def test_a_thread_that_fits_is_one_request() -> None:
    model = CountingModel()
    with memory(model) as mem:
        result = mem.update(thread(40), thread_id="t", user_id="u")
    assert result.requests == 1 == len(model.sizes)
