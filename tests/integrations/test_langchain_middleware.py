"""MemoryMiddleware inside real ``create_agent`` agents with a recording fake model."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import dynamic_prompt
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from memfold import Memory
from memfold.conversation import capture
from memfold.errors import StorageError
from memfold.integrations.langchain import (
    MemoryMiddleware,
    with_memory_block,
)
from memfold.model import MemoryDocument, Message, Scope
from memfold.testing import FakeClock, InMemoryStore

BLOCK_TAG = "<user_memory>"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def tool_call_then_answer() -> tuple[AIMessage, AIMessage]:
    call = AIMessage(content="", tool_calls=[{"name": "add", "args": {"a": 2, "b": 3}, "id": "c1"}])
    return call, AIMessage(content="2 + 3 is 5.")


def build(model: Any, middleware: Any, *, system_prompt: str | None = "You are helpful.") -> Any:
    return create_agent(
        model,
        tools=[add],
        system_prompt=system_prompt,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def ask(graph: Any, text: str, /, *, thread: str = "t1", **context: Any) -> dict[str, Any]:
    result: dict[str, Any] = graph.invoke(
        {"messages": [{"role": "user", "content": text}]}, config(thread), context=context
    )
    return result


async def aask(graph: Any, text: str, /, *, thread: str = "t1", **context: Any) -> dict[str, Any]:
    result: dict[str, Any] = await graph.ainvoke(
        {"messages": [{"role": "user", "content": text}]}, config(thread), context=context
    )
    return result


def assert_no_block_in_state(agent: Any, result: dict[str, Any], thread: str = "t1") -> None:
    saved = agent.get_state(config(thread)).values["messages"]
    for message in [*result["messages"], *saved]:
        assert not isinstance(message, SystemMessage)
        assert BLOCK_TAG not in message.text


# --- injection ------------------------------------------------------------------------


def test_model_sees_memory_block_appended_to_system_message(
    memory: Memory, make_model: Callable[..., Any]
) -> None:
    memory.add_fact("Prefers Rust", user_id="alice")
    model = make_model()
    agent = build(model, MemoryMiddleware(memory))

    result = ask(agent, "Which language?", user_id="alice")

    system = model.system_texts()[0]
    assert system.startswith("You are helpful.\n\n")
    assert BLOCK_TAG in system
    assert "Prefers Rust" in system
    assert_no_block_in_state(agent, result)


def test_async_model_sees_memory_block_and_state_stays_clean(
    memory: Memory, make_model: Callable[..., Any]
) -> None:
    memory.add_fact("Prefers Rust", user_id="alice")
    model = make_model(*tool_call_then_answer())
    agent = build(model, MemoryMiddleware(memory))

    result = asyncio.run(aask(agent, "What is 2 + 3?", user_id="alice"))

    assert len(model.calls) == 2  # the tool loop calls the model twice, both with memory
    assert all("Prefers Rust" in text for text in model.system_texts())
    assert_no_block_in_state(agent, result)


def test_agent_without_system_prompt_gets_a_system_message_with_the_block(
    memory: Memory, make_model: Callable[..., Any]
) -> None:
    memory.add_fact("Lives in Lisbon", user_id="bob")
    model = make_model()
    agent = build(model, MemoryMiddleware(memory, user_id="bob"), system_prompt=None)

    ask(agent, "Hello there")

    assert model.system_texts()[0].startswith(BLOCK_TAG)


def test_empty_memory_leaves_the_request_untouched(
    memory: Memory, make_model: Callable[..., Any]
) -> None:
    model = make_model()
    agent = build(model, MemoryMiddleware(memory), system_prompt=None)

    ask(agent, "Hello there", user_id="nobody")

    assert model.calls[0][0].type == "human"


def test_block_is_appended_to_a_dynamic_prompt_listed_before_the_middleware(
    memory: Memory, make_model: Callable[..., Any]
) -> None:
    @dynamic_prompt
    def prompt(request: Any) -> str:
        return "Dynamic prompt."

    memory.add_fact("Prefers Rust", user_id="alice")
    model = make_model()
    agent = create_agent(
        model, middleware=[prompt, MemoryMiddleware(memory)], checkpointer=InMemorySaver()
    )

    result = ask(agent, "hello", user_id="alice")

    (system,) = model.system_texts()
    assert system.startswith("Dynamic prompt.\n\n" + BLOCK_TAG)
    assert "Prefers Rust" in system
    assert_no_block_in_state(agent, result)


def test_list_content_system_message_gets_the_block_as_an_extra_text_block() -> None:
    cached = {"type": "text", "text": "Base.", "cache_control": {"type": "ephemeral"}}
    system = SystemMessage(content=[cached])

    merged = with_memory_block(system, "<user_memory>x</user_memory>")

    assert merged.content == [cached, {"type": "text", "text": "<user_memory>x</user_memory>"}]
    assert system.content == [cached]  # the agent's own message is not mutated


# --- capture --------------------------------------------------------------------------


def test_checkpointed_thread_is_extracted_once_per_quiet_period_with_only_new_turns(
    memory: Memory, spy: Any, clock: FakeClock, make_model: Callable[..., Any]
) -> None:
    agent = build(make_model(), MemoryMiddleware(memory))
    queue = memory._get_queue()  # the deterministic step the brief asks for

    for text in ("I write Go at work", "My team ships weekly", "We deploy on Fridays"):
        ask(agent, text, user_id="alice")
        clock.advance(10)  # within the 30 s debounce: each record replaces the pending one
    assert queue.run_due() == 0
    clock.advance(memory.config.debounce_seconds)
    assert queue.run_due() == 1

    for text in ("I moved to Berlin", "I bike to work"):
        ask(agent, text, user_id="alice")
    clock.advance(memory.config.debounce_seconds)
    assert queue.run_due() == 1

    first, second = spy.requests
    assert [m.content for m in first.messages if m.role == "user"] == [
        "I write Go at work",
        "My team ships weekly",
        "We deploy on Fridays",
    ]
    # only the new turns, after the one answer the updater keeps as context for corrections
    assert [m.content for m in second.messages] == [
        "Noted: We deploy on Fridays",
        "I moved to Berlin",
        "Noted: I moved to Berlin",
        "I bike to work",
        "Noted: I bike to work",
    ]
    assert first.thread_id == second.thread_id == "t1"


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_tool_messages_and_tool_call_turns_never_reach_memory(
    use_async: bool, memory: Memory, spy: Any, make_model: Callable[..., Any]
) -> None:
    agent = build(make_model(*tool_call_then_answer()), MemoryMiddleware(memory))

    if use_async:
        result = asyncio.run(aask(agent, "What is 2 + 3?", user_id="alice"))
    else:
        result = ask(agent, "What is 2 + 3?", user_id="alice")
    memory.flush()

    assert [m.type for m in result["messages"]] == ["human", "ai", "tool", "ai"]
    (request,) = spy.requests
    assert [(m.role, m.content) for m in request.messages] == [
        ("user", "What is 2 + 3?"),
        ("assistant", "2 + 3 is 5."),
    ]


def test_two_users_and_two_agents_stay_isolated(
    memory: Memory, make_model: Callable[..., Any]
) -> None:
    model = make_model()
    agent = build(model, MemoryMiddleware(memory))
    runs = [
        ("alice", "coder", "remember alice codes in Rust"),
        ("alice", "chef", "remember alice bakes bread"),
        ("bob", "coder", "remember bob codes in Go"),
    ]
    for index, (user, bucket, text) in enumerate(runs):
        ask(agent, text, thread=f"t{index}", user_id=user, agent=bucket)
    memory.flush()

    def facts(user: str, bucket: str) -> list[str]:
        return [f.content for f in memory.get(user_id=user, agent=bucket).facts]

    assert facts("alice", "coder") == ["alice codes in Rust"]
    assert facts("alice", "chef") == ["alice bakes bread"]
    assert facts("bob", "coder") == ["bob codes in Go"]
    assert facts("bob", "chef") == []

    model.calls.clear()
    ask(agent, "hi", thread="t9", user_id="bob", agent="coder")
    (system,) = model.system_texts()
    assert "bob codes in Go" in system
    assert "alice" not in system


@dataclass
class AppContext:
    user_id: str
    agent: str | None = None


@pytest.mark.parametrize(
    ("options", "context", "expected"),
    [
        ({}, {"user_id": "carol", "agent": "a1"}, Scope("carol", "a1")),
        ({}, AppContext("carol"), Scope("carol", None)),
        ({"user_id": "fixed", "agent": "bucket"}, {"user_id": "ignored"}, Scope("fixed", "bucket")),
        (
            {"user_id": lambda rt: rt.context["uid"].upper()},
            {"uid": "dave"},
            Scope("DAVE", None),
        ),
        ({}, None, Scope(None, None)),
    ],
    ids=["context-key", "context-attribute", "fixed", "callable", "default-user"],
)
def test_user_and_agent_are_resolved_from_options_or_runtime_context(
    options: dict[str, Any],
    context: Any,
    expected: Scope,
    memory: Memory,
    spy: Any,
    make_model: Callable[..., Any],
) -> None:
    agent = build(make_model(), MemoryMiddleware(memory, **options))

    agent.invoke(
        {"messages": [{"role": "user", "content": "remember x"}]}, config("t1"), context=context
    )
    memory.flush()

    assert memory.get(user_id=expected.user_id, agent=expected.agent).facts[0].content == "x"


def test_run_without_thread_id_records_nothing_and_warns_once(
    memory: Memory, make_model: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    agent = create_agent(make_model(), middleware=[MemoryMiddleware(memory)])
    caplog.set_level(logging.DEBUG, logger="memfold.integrations.langchain")

    for _ in range(2):
        agent.invoke({"messages": [{"role": "user", "content": "remember x"}]})

    assert memory.status().pending == 0
    warned = [r for r in caplog.records if "no thread id" in r.message]
    assert len(warned) == 1
    assert warned[0].levelno == logging.WARNING


def test_summary_messages_written_by_summarization_are_not_learned() -> None:
    summary = HumanMessage(
        content="Here is a summary of the conversation to date:\n\nx",
        additional_kwargs={"lc_source": "summarization"},
    )
    user = HumanMessage(content="hello")

    assert capture([summary, user, AIMessage(content="hi")]) == (
        Message("user", "hello"),
        Message("assistant", "hi"),
    )


# --- injection modes --------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "sees_new_fact"), [("per_call", True), ("per_thread", False)])
def test_fact_learned_in_turn_one_is_seen_in_turn_two_only_with_per_call(
    mode: str, sees_new_fact: bool, memory: Memory, make_model: Callable[..., Any]
) -> None:
    model = make_model()
    agent = build(model, MemoryMiddleware(memory, injection_mode=mode))  # type: ignore[arg-type]
    memory.add_fact("Known before", user_id="alice")

    ask(agent, "remember likes tea", user_id="alice")
    memory.flush()
    ask(agent, "what do I like?", user_id="alice")

    first, second = model.system_texts()
    assert "likes tea" not in first
    assert "Known before" in first
    assert ("likes tea" in second) is sees_new_fact
    assert "Known before" in second


def test_injection_mode_defaults_to_the_memory_config(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory(injection_mode="per_thread")

    assert MemoryMiddleware(memory).injection_mode == "per_thread"
    assert MemoryMiddleware(memory, injection_mode="per_call").injection_mode == "per_call"


def test_per_thread_freezes_each_thread_separately_and_bounds_the_cache(
    memory: Memory, make_model: Callable[..., Any]
) -> None:
    model = make_model()
    middleware = MemoryMiddleware(memory, injection_mode="per_thread", max_frozen_blocks=1)
    agent = build(model, middleware)

    ask(agent, "remember likes tea", thread="t1", user_id="alice")
    memory.flush()
    ask(agent, "hi", thread="t2", user_id="alice")  # a new thread renders fresh memory
    ask(agent, "hi again", thread="t1", user_id="alice")  # t1 was evicted: rendered again

    first, second, third = model.system_texts()
    assert "likes tea" not in first
    assert "likes tea" in second
    assert "likes tea" in third
    assert len(middleware._frozen) == 1


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"injection_mode": "sometimes"}, ValueError),
        ({"max_frozen_blocks": 0}, ValueError),
        ({"user_id": 42}, TypeError),
    ],
)
def test_bad_options_are_rejected_at_construction(
    options: dict[str, Any], error: type[Exception], memory: Memory
) -> None:
    with pytest.raises(error):
        MemoryMiddleware(memory, **options)


# --- fail open --------------------------------------------------------------------------


class BrokenStore(InMemoryStore):
    """Loads always fail, like a store whose disk or database is gone."""

    def load(self, scope: Scope) -> MemoryDocument:
        raise StorageError(f"cannot read memory of {scope}: disk is gone")


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_store_that_raises_does_not_break_the_turn(
    use_async: bool,
    make_memory: Callable[..., Memory],
    make_model: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    memory = make_memory(store=BrokenStore())
    model = make_model()
    agent = build(model, MemoryMiddleware(memory))

    with caplog.at_level(logging.WARNING, logger="memfold.integrations.langchain"):
        if use_async:
            result = asyncio.run(aask(agent, "hello", user_id="alice"))
        else:
            result = ask(agent, "hello", user_id="alice")

    assert result["messages"][-1].text == "Noted: hello"
    assert model.system_texts() == ["You are helpful."]
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "thread 't1', user 'alice'" in warning.getMessage()
    assert warning.exc_info is not None
    assert warning.exc_info[0] is StorageError


def test_resolver_that_raises_does_not_break_the_turn(
    memory: Memory, make_model: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    def broken(runtime: Any) -> str:
        raise KeyError("user_id")

    agent = build(make_model(), MemoryMiddleware(memory, user_id=broken))

    with caplog.at_level(logging.WARNING, logger="memfold.integrations.langchain"):
        result = ask(agent, "remember x")

    assert result["messages"][-1].text == "Noted: remember x"
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("could not load memory" in m for m in messages)
    assert any("could not record" in m for m in messages)


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_resolver_that_raises_is_not_logged_as_the_default_user(
    use_async: bool,
    memory: Memory,
    make_model: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(runtime: Any) -> str:
        raise KeyError("account")

    agent = build(make_model(), MemoryMiddleware(memory, agent=broken))

    with caplog.at_level(logging.WARNING, logger="memfold.integrations.langchain"):
        if use_async:
            asyncio.run(aask(agent, "remember x", user_id="alice"))
        else:
            ask(agent, "remember x", user_id="alice")

    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(messages) == 2  # the model call and the record
    for message in messages:
        assert "default user" not in message
        assert "unresolved" in message


def test_record_that_raises_does_not_break_the_turn(
    memory: Memory,
    make_model: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent = build(make_model(), MemoryMiddleware(memory))

    def broken(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("queue database is gone")

    monkeypatch.setattr(memory, "record", broken)
    monkeypatch.setattr(memory, "arecord", broken)

    with caplog.at_level(logging.WARNING, logger="memfold.integrations.langchain"):
        result = asyncio.run(aask(agent, "remember x", user_id="alice"))

    assert result["messages"][-1].text == "Noted: remember x"
    assert any("could not record" in r.getMessage() for r in caplog.records)


def test_record_on_a_closed_memory_does_not_break_the_turn(
    memory: Memory, make_model: Callable[..., Any]
) -> None:
    agent = build(make_model(), MemoryMiddleware(memory))
    memory.close()

    result = asyncio.run(aask(agent, "remember x", user_id="alice"))

    assert result["messages"][-1].text == "Noted: remember x"


def test_model_errors_are_not_swallowed(memory: Memory, make_model: Callable[..., Any]) -> None:
    def explode(messages: list[Any]) -> AIMessage:
        raise RuntimeError("model is down")

    agent = build(make_model(explode), MemoryMiddleware(memory))

    with pytest.raises(RuntimeError, match="model is down"):
        ask(agent, "hello", user_id="alice")


class ThreadRecordingStore(InMemoryStore):
    """Remembers which OS thread each load ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.load_threads: list[int] = []

    def load(self, scope: Scope) -> MemoryDocument:
        self.load_threads.append(threading.get_ident())
        return super().load(scope)


def test_async_injection_reads_the_store_off_the_event_loop_thread(
    make_memory: Callable[..., Memory], make_model: Callable[..., Any]
) -> None:
    store = ThreadRecordingStore()
    memory = make_memory(store=store)
    agent = build(make_model(), MemoryMiddleware(memory))
    loop_threads: list[int] = []

    async def run() -> None:
        loop_threads.append(threading.get_ident())
        await aask(agent, "hello", user_id="alice")

    asyncio.run(run())

    assert store.load_threads
    assert loop_threads[0] not in store.load_threads


def test_a_context_without_user_id_is_warned_about_once(
    memory: Memory, make_model: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    agent = build(make_model(), MemoryMiddleware(memory))
    with caplog.at_level(logging.WARNING, logger="memfold.integrations.langchain"):
        ask(agent, "hello", tenant="acme")
        ask(agent, "hello again", tenant="acme")
    warnings = [r for r in caplog.records if "has no user_id" in r.getMessage()]
    assert len(warnings) == 1


def test_no_warning_when_the_user_id_is_given(
    memory: Memory, make_model: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    agent = build(make_model(), MemoryMiddleware(memory))
    with caplog.at_level(logging.WARNING, logger="memfold.integrations.langchain"):
        ask(agent, "hello", user_id="alice")
    assert "has no user_id" not in caplog.text
