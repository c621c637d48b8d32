"""MemorySummarizationMiddleware records what the stock summary replaces, each turn once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from memfold import Memory
from memfold.integrations.langchain import (
    MemoryMiddleware,
    MemorySummarizationMiddleware,
    dropped_messages,
)

CONFIG = {"configurable": {"thread_id": "t1"}}
TURNS = ("I write Go", "My team is in Oslo", "We ship weekly", "What do you know?")


def spy_on_record(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Record every ``memory.record`` call (``arecord`` goes through it too)."""
    calls: list[dict[str, Any]] = []
    real = memory.record

    def record(messages: Any, /, **kwargs: Any) -> bool:
        calls.append({"messages": list(messages), **kwargs})
        return real(messages, **kwargs)

    monkeypatch.setattr(memory, "record", record)
    return calls


def summarising_agent(memory: Memory, summary_model: Any, chat_model: Any) -> Any:
    summarise = MemorySummarizationMiddleware(
        memory, summary_model, user_id="alice", trigger=("messages", 6), keep=("messages", 2)
    )
    return create_agent(
        chat_model,
        middleware=[summarise, MemoryMiddleware(memory, user_id="alice")],
        checkpointer=InMemorySaver(),
    )


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_records_urgently_the_thread_holding_the_messages_summarised_away(
    use_async: bool,
    memory: Memory,
    make_model: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    summary_model = make_model(AIMessage(content="Alice writes Go in Oslo."))
    agent = summarising_agent(memory, summary_model, make_model())
    calls = spy_on_record(memory, monkeypatch)

    async def run(text: str) -> None:
        turn = {"messages": [{"role": "user", "content": text}]}
        if use_async:
            await agent.ainvoke(turn, CONFIG)
        else:
            agent.invoke(turn, CONFIG)

    for text in TURNS[:-1]:
        asyncio.run(run(text))
    before = agent.get_state(CONFIG).values["messages"]
    asyncio.run(run(TURNS[-1]))
    after = agent.get_state(CONFIG).values["messages"]

    urgent = [c for c in calls if c.get("urgent")]
    assert len(urgent) == 1
    # 7 messages at the 4th model call, keep 2: the first 5 go into the summary. The
    # record is the thread as it stood, so the watermark (on a kept message) is found.
    recorded = [m.id for m in urgent[0]["messages"]]
    assert recorded == [*(m.id for m in before), after[2].id]
    assert {m.id for m in after}.isdisjoint(recorded[:5])
    assert urgent[0]["thread_id"] == "t1"
    assert urgent[0]["user_id"] == "alice"
    assert (
        after[0].text
        == "Here is a summary of the conversation to date:\n\nAlice writes Go in Oslo."
    )
    assert after[1].id == before[5].id  # kept: the last answer and the new question
    assert after[2].text == TURNS[-1]
    assert "I write Go" in summary_model.calls[0][0].text  # the stock prompt was used


def test_urgent_record_merges_with_the_pending_update_so_nothing_is_lost(
    memory: Memory, spy: Any, make_model: Callable[..., Any]
) -> None:
    agent = summarising_agent(memory, make_model(AIMessage(content="S")), make_model())

    for text in ("remember writes Go", "remember lives in Oslo", "hi", "bye"):
        agent.invoke({"messages": [{"role": "user", "content": text}]}, CONFIG)
    memory.flush()

    facts = {f.content for f in memory.get(user_id="alice").facts}
    assert facts == {"writes Go", "lives in Oslo"}
    seen = [m.content for r in spy.requests for m in r.messages]
    assert not any(text.startswith("Here is a summary") for text in seen)


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_worker_taking_the_urgent_record_at_once_never_extracts_a_turn_twice(
    use_async: bool,
    memory: Memory,
    spy: Any,
    clock: Any,
    make_model: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent = summarising_agent(memory, make_model(AIMessage(content="S")), make_model())
    queue = memory._get_queue()
    real = memory.record

    def record(messages: Any, /, **kwargs: Any) -> bool:
        queued = real(messages, **kwargs)
        if kwargs.get("urgent"):
            queue.run_due()  # a free worker takes the urgent job while the turn goes on
        return queued

    monkeypatch.setattr(memory, "record", record)

    async def run(text: str) -> None:
        turn = {"messages": [{"role": "user", "content": text}]}
        if use_async:
            await agent.ainvoke(turn, CONFIG)
        else:
            agent.invoke(turn, CONFIG)

    turns = [f"turn {i}" for i in range(6)]
    for text in turns:
        asyncio.run(run(text))
        clock.advance(memory.config.debounce_seconds)  # each turn is extracted when quiet
        queue.run_due()

    seen = [m.content for r in spy.requests for m in r.messages if m.role == "user"]
    assert seen == turns  # the summarised turns were extracted once, before they left


def test_without_thread_id_the_summary_is_made_and_nothing_recorded(
    memory: Memory, make_model: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    summarise = MemorySummarizationMiddleware(
        memory,
        make_model(AIMessage(content="S")),
        trigger=("messages", 3),
        keep=("messages", 1),
    )
    agent = create_agent(make_model(), middleware=[summarise])
    calls = spy_on_record(memory, monkeypatch)
    history = [HumanMessage("a"), AIMessage("b"), HumanMessage("c")]

    result = agent.invoke({"messages": history})

    assert result["messages"][0].text.endswith("S")
    assert calls == []


def test_record_failure_is_logged_and_the_summary_still_applies(
    memory: Memory,
    make_model: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = summarising_agent(memory, make_model(AIMessage(content="S")), make_model())

    def broken(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("queue database is gone")

    monkeypatch.setattr(memory, "record", broken)
    monkeypatch.setattr(memory, "arecord", broken)

    with caplog.at_level(logging.WARNING, logger="memfold.integrations.langchain"):
        for text in TURNS:
            result = agent.invoke({"messages": [{"role": "user", "content": text}]}, CONFIG)

    assert result["messages"][0].text.endswith("S")
    assert any("could not record" in r.getMessage() for r in caplog.records)


def test_is_a_summarization_middleware_with_its_options() -> None:
    from memfold.testing import InMemoryStore

    with Memory(store=InMemoryStore(), start_workers=False) as memory:
        middleware = MemorySummarizationMiddleware(
            memory, _model(), trigger=("tokens", 100), keep=("messages", 3)
        )
        assert isinstance(middleware, SummarizationMiddleware)
        assert middleware.keep == ("messages", 3)
        with pytest.raises(TypeError):
            MemorySummarizationMiddleware(memory, _model(), user_id=3)  # type: ignore[arg-type]


def _model() -> Any:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    return FakeListChatModel(responses=["x"])


def test_dropped_messages_reads_remove_all_and_single_removals() -> None:
    a, b, c = HumanMessage("a", id="1"), AIMessage("b", id="2"), HumanMessage("c", id="3")
    summary = HumanMessage("s", id="9")

    remove_all = {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), summary, c]}
    assert dropped_messages([a, b, c], remove_all) == [a, b]
    assert dropped_messages([a, b, c], {"messages": [RemoveMessage(id="2")]}) == [b]
    assert dropped_messages([a, b, c], None) == []
    assert dropped_messages([a, b, c], {"messages": [summary]}) == []
