"""MemoryMiddleware logs what each fresh memory block holds and leaves out, at DEBUG only."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

from memfold import Memory
from memfold.integrations.langchain import MemoryMiddleware

LOGGER = "memfold.integrations.langchain"


def agent(model: Any, memory: Memory) -> Any:
    return create_agent(
        model, tools=[], system_prompt="You are helpful.",
        middleware=[MemoryMiddleware(memory)], checkpointer=InMemorySaver(),
    )  # fmt: skip


def question(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def seed(memory: Memory) -> None:
    memory.add_fact("Prefers Rust", user_id="alice")
    for n in range(99):
        memory.add_fact(
            f"Detail {n}: likes long detailed examples about topic {n}", user_id="alice"
        )


def test_debug_logging_reports_the_block_and_what_was_dropped(
    memory: Memory, make_model: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    seed(memory)
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    agent(make_model(), memory).invoke(
        question("Hi"), {"configurable": {"thread_id": "t1"}}, context={"user_id": "alice"}
    )
    (line,) = [r.getMessage() for r in caplog.records if "memory block for" in r.getMessage()]
    report = memory.explain_context(user_id="alice")
    assert f"thread 't1', user 'alice': {report.tokens} of {report.budget} tokens" in line
    assert "(budget)" in line


def test_async_runs_log_the_report_too(
    memory: Memory, make_model: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    seed(memory)
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    asyncio.run(
        agent(make_model(), memory).ainvoke(
            question("Hi"), {"configurable": {"thread_id": "t2"}}, context={"user_id": "alice"}
        )
    )
    assert any("memory block for thread 't2'" in r.getMessage() for r in caplog.records)


def test_no_report_is_computed_unless_debug_is_on(
    memory: Memory, make_model: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(memory)
    logging.getLogger(LOGGER).setLevel(logging.INFO)
    calls: list[object] = []
    monkeypatch.setattr(memory, "explain_context", lambda **kw: calls.append(kw))
    try:
        agent(make_model(), memory).invoke(
            question("Hi"), {"configurable": {"thread_id": "t3"}}, context={"user_id": "alice"}
        )
    finally:
        logging.getLogger(LOGGER).setLevel(logging.NOTSET)
    assert calls == []


def test_a_per_thread_block_frozen_before_forget_user_is_not_injected_again(
    memory: Memory, make_model: Callable[..., Any]
) -> None:
    memory.add_fact("Owns a parrot named Xylophonia", user_id="alice")
    model = make_model()
    graph = create_agent(
        model, tools=[], system_prompt="You are helpful.",
        middleware=[MemoryMiddleware(memory, injection_mode="per_thread")],
        checkpointer=InMemorySaver(),
    )  # fmt: skip
    run = {"configurable": {"thread_id": "t1"}}
    graph.invoke(question("Hi"), run, context={"user_id": "alice"})
    memory.forget_user("alice")
    graph.invoke(question("Still there?"), run, context={"user_id": "alice"})
    first, second = model.system_texts()
    assert "Xylophonia" in first
    assert "Xylophonia" not in second
