"""``Memory.record()`` cost: capture + signals + enqueue, what an agent pays per turn."""

from __future__ import annotations

import statistics
import tempfile
import time
from typing import Any

from memfold import Memory, MemoryConfig


def _conversation(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(turns):
        question = f"Question {i}: how should I tune the Kafka consumer lag alerts?"
        out.append({"role": "user", "content": question, "id": f"u{i}"})
        answer = f"Answer {i}: alert on the lag trend over 5 minutes, not on spikes."
        out.append({"role": "assistant", "content": answer, "id": f"a{i}"})
    return out


def _langchain_conversation(turns: int) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage

    out: list[Any] = []
    for item in _conversation(turns):
        cls = HumanMessage if item["role"] == "user" else AIMessage
        out.append(cls(content=item["content"], id=item["id"]))
    return out


def _median_us(messages: list[Any], rounds: int) -> float:
    with tempfile.TemporaryDirectory() as home:
        mem = Memory(MemoryConfig(home=home), start_workers=False)
        samples: list[float] = []
        for i in range(rounds):
            started = time.perf_counter_ns()
            mem.record(messages, thread_id=f"t{i % 500}", user_id=f"user{i % 50}")
            samples.append((time.perf_counter_ns() - started) / 1000)
        # nothing is processed: the benchmark measures the caller's cost only
        mem._queue = None  # drop pending items unprocessed
        mem.close()
    return statistics.median(samples)


def run(quick: bool) -> list[dict[str, Any]]:
    rounds = 2_000 if quick else 20_000
    return [
        {
            "benchmark": "record(), 20 OpenAI-style messages (median)",
            "value": _median_us(_conversation(10), rounds),
            "unit": "µs",
            "target": "≤ 100 µs",
            "reference": "n/a (synchronous filter + timer reset)",
        },
        {
            "benchmark": "record(), 20 LangChain messages (median)",
            "value": _median_us(_langchain_conversation(10), rounds),
            "unit": "µs",
            "target": "≤ 100 µs",
            "reference": "n/a",
        },
    ]
