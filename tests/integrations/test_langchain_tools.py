"""``memory_tools`` inside real ``create_agent`` agents driven by a scripted model, and the
middleware's ``relevant`` injection mode."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from memfold import Memory
from memfold.errors import StorageError
from memfold.integrations.langchain import MemoryMiddleware, latest_user_text, memory_tools
from memfold.model import MemoryDocument, Scope
from memfold.testing import InMemoryStore

#: Longer than any filler fact, so no room the fillers leave over can take it.
PEANUTS = "Is allergic to peanuts and carries an EpiPen everywhere"


def call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def last_result(messages: list[BaseMessage]) -> dict[str, Any]:
    tool_message = next(m for m in reversed(messages) if isinstance(m, ToolMessage))
    loaded: dict[str, Any] = json.loads(tool_message.text)
    return loaded


def results(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each tool call's JSON result, by tool call id."""
    return {
        m.tool_call_id: json.loads(m.text) for m in state["messages"] if isinstance(m, ToolMessage)
    }


def agent_with_tools(memory: Memory, model: Any, **options: Any) -> Any:
    return create_agent(model, tools=memory_tools(memory, **options), checkpointer=InMemorySaver())


def run(graph: Any, text: str = "Please manage my memory", **context: Any) -> dict[str, Any]:
    state: dict[str, Any] = graph.invoke(
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": "t1"}},
        context=context,
    )
    return state


def test_the_tools_have_their_names_and_hide_the_runtime(memory: Memory) -> None:
    tools = memory_tools(memory)

    assert [t.name for t in tools] == [
        "memory_search",
        "memory_add",
        "memory_update",
        "memory_delete",
    ]
    search_schema = tools[0].tool_call_schema.model_json_schema()
    assert set(search_schema["properties"]) == {"query", "limit", "category"}
    assert "preference" in tools[1].description


def test_a_scripted_agent_adds_searches_updates_and_deletes_a_fact(
    memory: Memory, make_model: Callable[..., Any]
) -> None:
    def update(messages: list[BaseMessage]) -> AIMessage:
        fact_id = last_result(messages)["results"][0]["id"]
        return call("memory_update", "c3", fact_id=fact_id, content="Is allergic to cashews")

    def delete(messages: list[BaseMessage]) -> AIMessage:
        return call("memory_delete", "c4", fact_id=last_result(messages)["updated"]["id"])

    model = make_model(
        call("memory_add", "c1", content="Is allergic to peanuts", category="context"),
        call("memory_search", "c2", query="peanut allergy"),
        update,
        delete,
        AIMessage(content="Done."),
    )
    agent = agent_with_tools(memory, model)

    state = run(agent, user_id="alice")

    out = results(state)
    added = out["c1"]["added"]
    assert added["content"] == "Is allergic to peanuts"
    assert added["category"] == "context"
    assert out["c2"]["results"][0]["id"] == added["id"]
    assert out["c2"]["results"][0]["score"] > 0
    assert out["c3"]["updated"] == {**added, "content": "Is allergic to cashews"}
    assert out["c4"] == {"deleted": added["id"]}
    assert state["messages"][-1].text == "Done."
    assert memory.get(user_id="alice").facts == ()
    assert memory.get().facts == ()  # nothing went to the default user


def test_tools_use_the_user_and_agent_of_the_runs_context(
    memory: Memory, make_model: Callable[..., Any]
) -> None:
    memory.add_fact("Prefers tabs", user_id="bob", agent="coder")
    memory.add_fact("Prefers spaces", user_id="alice", agent="coder")
    model = make_model(call("memory_search", "c1", query="prefers"), AIMessage(content="ok"))

    state = run(agent_with_tools(memory, model), user_id="bob", agent="coder")

    assert [r["content"] for r in results(state)["c1"]["results"]] == ["Prefers tabs"]


def test_fixed_ids_can_be_given_to_the_tools(
    memory: Memory, make_model: Callable[..., Any]
) -> None:
    model = make_model(call("memory_add", "c1", content="Likes Go"), AIMessage(content="ok"))

    run(agent_with_tools(memory, model, user_id="carol", agent=lambda rt: "helper"))

    assert [f.content for f in memory.get(user_id="carol", agent="helper").facts] == ["Likes Go"]


def test_errors_are_returned_to_the_model_as_json_and_the_run_goes_on(
    memory: Memory, make_model: Callable[..., Any]
) -> None:
    existing = memory.add_fact("Likes Go", user_id="alice")
    model = make_model(
        call("memory_update", "c1", fact_id="fact_nope", content="x"),
        call("memory_add", "c2", content="likes go"),
        call("memory_add", "c3", content="   "),
        call("memory_search", "c4", query="go", limit="many"),
        call("memory_update", "c5", fact_id=existing.id),
        call("memory_delete", "c6", fact_id="fact_nope"),
        call("memory_add", "c7", content="sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789ABCD"),
        AIMessage(content="Sorry about that."),
    )

    state = run(agent_with_tools(memory, model), user_id="alice")

    out = results(state)
    assert out["c1"]["type"] == "FactNotFoundError"
    assert out["c1"]["fact_id"] == "fact_nope"
    assert out["c2"]["type"] == "DuplicateFactError"
    assert out["c2"]["existing_id"] == existing.id
    assert out["c3"]["type"] == "ValueError"
    assert out["c4"]["type"] == "ValidationError"
    assert "limit" in out["c4"]["error"]
    assert "nothing to change" in out["c5"]["error"]
    assert out["c6"]["type"] == "FactNotFoundError"
    assert "secret" in out["c7"]["error"]
    assert state["messages"][-1].text == "Sorry about that."
    assert [f.content for f in memory.get(user_id="alice").facts] == ["Likes Go"]


class BrokenStore(InMemoryStore):
    def load(self, scope: Scope) -> MemoryDocument:
        raise StorageError("database is down")


def test_a_storage_failure_is_a_json_error_not_a_crash(
    make_memory: Callable[..., Memory], make_model: Callable[..., Any]
) -> None:
    memory = make_memory(store=BrokenStore())
    model = make_model(call("memory_search", "c1", query="anything"), AIMessage(content="ok"))

    state = run(agent_with_tools(memory, model), user_id="alice")

    assert results(state)["c1"] == {"error": "database is down", "type": "StorageError"}


def test_an_unexpected_failure_is_logged_and_returned(
    make_memory: Callable[..., Memory],
    make_model: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Exploding(InMemoryStore):
        def load(self, scope: Scope) -> MemoryDocument:
            raise RuntimeError("boom")

    memory = make_memory(store=Exploding())
    model = make_model(call("memory_delete", "c1", fact_id="f"), AIMessage(content="ok"))

    state = run(agent_with_tools(memory, model), user_id="alice")

    assert results(state)["c1"] == {"error": "boom", "type": "RuntimeError"}
    assert "tool memory_delete failed" in caplog.text


def test_tools_work_in_an_async_run(memory: Memory, make_model: Callable[..., Any]) -> None:
    model = make_model(
        call("memory_add", "c1", content="Lives in Lisbon", category="context"),
        AIMessage(content="ok"),
    )
    agent = agent_with_tools(memory, model)

    asyncio.run(
        agent.ainvoke(
            {"messages": [{"role": "user", "content": "I live in Lisbon"}]},
            {"configurable": {"thread_id": "t1"}},
            context={"user_id": "dan"},
        )
    )

    assert [f.content for f in memory.get(user_id="dan").facts] == ["Lives in Lisbon"]


# --- relevant injection mode ------------------------------------------------------------


def crowd(memory: Memory, user_id: str = "alice") -> None:
    # shorter than the peanut fact, so no room left over by them can take it
    for i in range(120):
        memory.add_fact(f"Knows tool {i}", confidence=0.95, user_id=user_id)
    memory.add_fact(PEANUTS, confidence=0.71, user_id=user_id)


@pytest.mark.parametrize(("mode", "injected"), [("relevant", True), ("per_call", False)])
def test_relevant_mode_injects_what_matters_for_the_latest_message(
    make_memory: Callable[..., Memory], make_model: Callable[..., Any], mode: str, injected: bool
) -> None:
    memory = make_memory(max_injection_tokens=400, guaranteed_token_budget=100, max_facts=500)
    crowd(memory)
    model = make_model()
    agent = create_agent(
        model,
        middleware=[MemoryMiddleware(memory, injection_mode=mode)],
        checkpointer=InMemorySaver(),
    )

    run(agent, "Is satay sauce with peanuts OK for me?", user_id="alice")

    assert ("Is allergic to peanuts" in model.system_texts()[0]) is injected


def test_relevant_mode_is_taken_from_the_config_and_works_async(
    make_memory: Callable[..., Memory], make_model: Callable[..., Any]
) -> None:
    memory = make_memory(
        max_injection_tokens=400,
        guaranteed_token_budget=100,
        max_facts=500,
        injection_mode="relevant",
    )
    crowd(memory)
    model = make_model()
    middleware = MemoryMiddleware(memory)
    agent = create_agent(model, middleware=[middleware], checkpointer=InMemorySaver())

    asyncio.run(
        agent.ainvoke(
            {"messages": [{"role": "user", "content": "peanuts?"}]},
            {"configurable": {"thread_id": "t1"}},
            context={"user_id": "alice"},
        )
    )

    assert middleware.injection_mode == "relevant"
    assert "Is allergic to peanuts" in model.system_texts()[0]


def test_latest_user_text_reads_the_last_human_message() -> None:
    from langchain_core.messages import HumanMessage

    messages = [
        HumanMessage("first"),
        AIMessage("reply"),
        HumanMessage(content=[{"type": "text", "text": "second"}, {"type": "image_url"}]),
        AIMessage("again"),
    ]

    assert latest_user_text(messages) == "second"
    assert latest_user_text([AIMessage("only the model")]) is None
    assert latest_user_text([HumanMessage("   ")]) is None
