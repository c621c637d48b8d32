"""LangChain ``MemoryMiddleware`` overhead: what a model call pays for memory injection.

Measures ``wrap_model_call`` around a handler that returns at once (the hook's own cost,
100-fact memory in the JSON store), in both injection modes, and ``after_agent``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from memfold import Memory, MemoryConfig


def _median_us(call: Callable[[], object], rounds: int) -> float:
    for _ in range(min(100, rounds)):
        call()  # warm caches (store, renderer) as a long-running agent would have them
    samples: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter_ns()
        call()
        samples.append((time.perf_counter_ns() - started) / 1000)
    return statistics.median(samples)


def _measure(rounds: int) -> dict[str, float]:
    from langchain.agents.middleware import ModelRequest, ModelResponse
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langgraph.runtime import ExecutionInfo, Runtime

    from memfold.integrations.langchain import MemoryMiddleware

    response = ModelResponse(result=[AIMessage(content="ok")])
    messages: list[Any] = []
    for i in range(10):
        messages.append(HumanMessage(content=f"Question {i} about Kafka lag?", id=f"u{i}"))
        messages.append(AIMessage(content=f"Answer {i}: alert on the trend.", id=f"a{i}"))
    info = ExecutionInfo(checkpoint_id="c", checkpoint_ns="", task_id="k", thread_id="t1")
    runtime: Runtime[Any] = Runtime(context={"user_id": "alice"}, execution_info=info)
    request = ModelRequest(
        model=FakeListChatModel(responses=["ok"]),
        messages=messages,
        system_message=SystemMessage(content="You are a helpful assistant."),
        runtime=runtime,
    )

    def handler(req: Any) -> Any:
        return response

    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as home:
        mem = Memory(MemoryConfig(home=home), start_workers=False)
        for i in range(100):
            mem.add_fact(f"Fact number {i}: prefers option {i} for setting {i}", user_id="alice")
        per_call = MemoryMiddleware(mem, injection_mode="per_call")
        per_thread = MemoryMiddleware(mem, injection_mode="per_thread")
        results["none"] = _median_us(lambda: handler(request), rounds)
        results["per_call"] = _median_us(lambda: per_call.wrap_model_call(request, handler), rounds)
        results["per_thread"] = _median_us(
            lambda: per_thread.wrap_model_call(request, handler), rounds
        )
        state: Any = {"messages": messages}
        results["after_agent"] = _median_us(lambda: per_call.after_agent(state, runtime), rounds)
        mem._queue = None  # drop pending records unprocessed: only the caller's cost counts
        mem.close()
    return results


def run(quick: bool) -> list[dict[str, Any]]:
    figures = _measure(500 if quick else 5_000)
    base = figures["none"]
    return [
        {
            "benchmark": "wrap_model_call overhead, per_call, 100 facts (median)",
            "value": figures["per_call"] - base,
            "unit": "µs",
            "target": "≤ 1,000 µs",
            "reference": "n/a (re-renders per thread: 1.8 ms, REFERENCE.md)",
        },
        {
            "benchmark": "wrap_model_call overhead, per_thread, frozen (median)",
            "value": figures["per_thread"] - base,
            "unit": "µs",
            "target": "≤ 100 µs",
            "reference": "n/a",
        },
        {
            "benchmark": "after_agent, 20 LangChain messages (median)",
            "value": figures["after_agent"],
            "unit": "µs",
            "target": "≤ 200 µs",
            "reference": "n/a",
        },
    ]


if __name__ == "__main__":
    for row in run(quick=False):
        print(f"{row['benchmark']}: {row['value']:.1f} {row['unit']} (target {row['target']})")
