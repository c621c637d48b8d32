"""The MCP tools and resources, in process through the SDK's client: each tool does what
the same ``Memory`` call does, on the session's scope, and refuses bad input with a tool
error that names the problem."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_helpers import BERLIN, decode, error, in_process, ok, text

from memfold import Memory
from memfold.mcp import TOOL_NAMES, Binding, build_server

ALICE = Binding("alice", "coder")


def alice(memory: Memory) -> Any:
    return build_server(memory, binding=ALICE)


def test_lists_every_tool_with_a_description_and_schema(memory: Memory) -> None:
    async def scenario(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in in_process(alice(memory), scenario)}
    assert set(TOOL_NAMES) <= set(tools)
    for tool in tools.values():
        assert tool.description
        assert tool.input_schema["type"] == "object"
    assert tools["remember"].input_schema["required"] == ["content"]
    assert tools["recall"].input_schema["required"] == ["query"]
    assert set(tools["record_conversation"].input_schema["required"]) == {"thread_id", "messages"}
    assert tools["recall"].annotations.read_only_hint is True
    assert tools["forget"].annotations.destructive_hint is True


def test_remember_adds_a_manual_fact_to_the_bound_scope(memory: Memory) -> None:
    async def scenario(client: Client) -> Any:
        plain = ok(await client.call_tool("remember", {"content": "Prefers tea"}))
        given = ok(
            await client.call_tool(
                "remember",
                {"content": "Wants short answers", "category": "Preference", "confidence": 0.8},
            )
        )
        return plain["fact"], given["fact"]

    plain, given = in_process(alice(memory), scenario)
    stored = {f.id: f for f in memory.get(user_id="alice", agent="coder").facts}
    assert set(stored) == {plain["id"], given["id"]}
    assert stored[plain["id"]].is_manual
    assert (plain["category"], plain["confidence"]) == ("context", 0.9)  # the facade's defaults
    assert (given["category"], given["confidence"]) == ("preference", 0.8)
    assert memory.get(user_id="alice").facts == ()  # the shared bucket is another scope


def test_remember_refuses_a_duplicate_and_names_the_existing_fact(memory: Memory) -> None:
    first = memory.add_fact("Prefers tea", user_id="alice", agent="coder")

    async def scenario(client: Client) -> str:
        return error(await client.call_tool("remember", {"content": "prefers tea"}))

    message = in_process(alice(memory), scenario)
    assert first.id in message
    assert len(memory.get(user_id="alice", agent="coder").facts) == 1


def test_remember_redacts_secrets_and_refuses_a_fact_that_is_only_one(memory: Memory) -> None:
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2

    async def scenario(client: Client) -> tuple[dict[str, Any], str]:
        kept = ok(await client.call_tool("remember", {"content": f"Uses the key {key} at work"}))
        refused = error(await client.call_tool("remember", {"content": key}))
        return kept["fact"], refused

    kept, refused = in_process(alice(memory), scenario)
    assert key not in kept["content"]
    assert "secret" in refused
    stored = memory.get(user_id="alice", agent="coder").facts
    assert [f.content for f in stored] == [kept["content"]]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "content: Field required"),
        ({"content": 42}, "content: Input should be a valid string"),
        ({"content": "x y z", "confidence": "very"}, "confidence: Input should be a valid number"),
        ({"content": "Likes jazz", "confidence": 3}, "between 0 and 1"),
        ({"content": "   "}, "empty"),
    ],
)
def test_remember_rejects_bad_arguments_with_a_clear_tool_error(
    memory: Memory, arguments: dict[str, Any], expected: str
) -> None:
    async def scenario(client: Client) -> str:
        return error(await client.call_tool("remember", arguments))

    message = in_process(alice(memory), scenario)
    assert expected in message
    assert "pydantic.dev" not in message  # one readable line per field, no links
    assert memory.get(user_id="alice", agent="coder").facts == ()


def test_recall_searches_the_bound_scope_only(memory: Memory) -> None:
    memory.add_fact("Drinks green tea every morning", user_id="alice", agent="coder")
    memory.add_fact("Plays chess on weekends", user_id="alice", agent="coder")
    memory.add_fact("Drinks tea with milk", user_id="bob", agent="coder")

    async def scenario(client: Client) -> tuple[Any, Any, str, str]:
        hits = ok(await client.call_tool("recall", {"query": "tea"}))["hits"]
        one = ok(await client.call_tool("recall", {"query": "tea chess", "limit": 1}))["hits"]
        empty = error(await client.call_tool("recall", {"query": "  "}))
        zero = error(await client.call_tool("recall", {"query": "tea", "limit": 0}))
        return hits, one, empty, zero

    hits, one, empty, zero = in_process(alice(memory), scenario)
    assert [hit["fact"]["content"] for hit in hits] == ["Drinks green tea every morning"]
    assert hits[0]["score"] > 0
    assert len(one) == 1
    assert "query is empty" in empty
    assert "limit=0" in zero


def test_get_context_is_the_injection_block_of_the_scope(memory: Memory) -> None:
    for n in range(40):
        memory.add_fact(f"Knows fact number {n} about topic {n}", user_id="alice", agent="coder")

    async def scenario(client: Client) -> tuple[str, str, str, str]:
        full = text(await client.call_tool("get_context", {}))
        small = text(await client.call_tool("get_context", {"max_tokens": 80}))
        focused = text(await client.call_tool("get_context", {"query": "topic 7"}))
        bad = error(await client.call_tool("get_context", {"max_tokens": -1}))
        return full, small, focused, bad

    full, small, focused, bad = in_process(alice(memory), scenario)
    assert full == memory.context(user_id="alice", agent="coder")
    assert small == memory.context(user_id="alice", agent="coder", max_tokens=80)
    assert len(small) < len(full)
    assert focused == memory.context(user_id="alice", agent="coder", query="topic 7")
    assert "max_tokens=-1" in bad


def test_get_context_of_an_empty_memory_is_empty(memory: Memory) -> None:
    async def scenario(client: Client) -> Any:
        return await client.call_tool("get_context", {})

    result = in_process(alice(memory), scenario)
    assert not result.is_error
    assert result.structured_content == {"result": ""}


def test_list_facts_lists_redacted_facts_and_filters_by_category(memory: Memory) -> None:
    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    export = memory.export(user_id="alice", agent="coder")
    fact = {"id": "fact_00000001", "content": f"Deploys with token {key}", "category": "knowledge",
            "confidence": 0.9, "createdAt": "2026-01-01T00:00:00Z",
            "updatedAt": "2026-01-01T00:00:00Z", "source": "t0"}  # fmt: skip
    memory.import_document({**export, "facts": [fact]}, user_id="alice", agent="coder")
    memory.add_fact("Prefers tea", category="preference", user_id="alice", agent="coder")

    async def scenario(client: Client) -> tuple[Any, Any, str]:
        every = ok(await client.call_tool("list_facts", {}))["facts"]
        prefs = ok(await client.call_tool("list_facts", {"category": " PREFERENCE "}))["facts"]
        blank = error(await client.call_tool("list_facts", {"category": ""}))
        return every, prefs, blank

    every, prefs, blank = in_process(alice(memory), scenario)
    assert [f["category"] for f in every] == ["knowledge", "preference"]
    assert key not in every[0]["content"]  # stored before redaction existed: redacted at recall
    assert [f["content"] for f in prefs] == ["Prefers tea"]
    assert "category is empty" in blank


def test_update_fact_edits_through_the_facade(memory: Memory) -> None:
    fact = memory.add_fact("Lives in Paris", user_id="alice", agent="coder")
    other = memory.add_fact("Lives in Rome", user_id="bob", agent="coder")

    async def scenario(client: Client) -> tuple[Any, str, str, str]:
        edited = ok(
            await client.call_tool(
                "update_fact", {"fact_id": fact.id, "content": "Lives in Lyon", "confidence": 0.95}
            )
        )["fact"]
        nothing = error(await client.call_tool("update_fact", {"fact_id": fact.id}))
        unknown = error(
            await client.call_tool("update_fact", {"fact_id": "fact_nope", "content": "x"})
        )
        foreign = error(
            await client.call_tool("update_fact", {"fact_id": other.id, "content": "x"})
        )
        return edited, nothing, unknown, foreign

    edited, nothing, unknown, foreign = in_process(alice(memory), scenario)
    assert (edited["id"], edited["content"], edited["confidence"]) == (
        fact.id,
        "Lives in Lyon",
        0.95,
    )
    assert memory.get(user_id="alice", agent="coder").fact(fact.id).content == "Lives in Lyon"
    assert "nothing to change" in nothing
    assert "fact_nope" in unknown
    assert "list_facts" in unknown  # the hint names the tool, not the CLI
    assert other.id in foreign  # another user's fact is simply not in this scope
    assert memory.get(user_id="bob", agent="coder").fact(other.id).content == "Lives in Rome"


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("forget", {"fact_id": ""}, "fact_id: String should have at least 1 character"),
        ("update_fact", {"fact_id": "", "content": "x"}, "fact_id: String should have at least"),
        (
            "record_conversation",
            {"thread_id": "", "messages": BERLIN},
            "thread_id: String should have at least 1 character",
        ),
    ],
)
def test_an_empty_id_is_refused_by_name(
    memory: Memory, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    memory.add_fact("Owns a red bicycle", user_id="alice", agent="coder")

    async def scenario(client: Client) -> str:
        return error(await client.call_tool(tool, arguments))

    assert expected in in_process(alice(memory), scenario)
    assert len(memory.get(user_id="alice", agent="coder").facts) == 1
    assert memory.status().pending == 0


def test_forget_deletes_the_fact_from_memory_and_context(memory: Memory) -> None:
    fact = memory.add_fact("Owns a red bicycle", user_id="alice", agent="coder")

    async def scenario(client: Client) -> tuple[Any, str, str]:
        gone = ok(await client.call_tool("forget", {"fact_id": fact.id}))
        again = error(await client.call_tool("forget", {"fact_id": fact.id}))
        block = text(await client.call_tool("get_context", {}))
        return gone, again, block

    gone, again, block = in_process(alice(memory), scenario)
    assert gone == {"forgotten": fact.id}
    assert fact.id in again
    assert "list_facts gives the ids" in again
    assert "bicycle" not in block
    assert memory.get(user_id="alice", agent="coder").facts == ()


def test_record_conversation_queues_an_update_for_the_bound_scope(memory: Memory) -> None:
    async def scenario(client: Client) -> tuple[Any, Any]:
        queued = ok(
            await client.call_tool("record_conversation", {"thread_id": "t1", "messages": BERLIN})
        )
        trivial = ok(
            await client.call_tool(
                "record_conversation",
                {"thread_id": "t2", "messages": [{"role": "user", "content": "ok"}]},
            )
        )
        return queued, trivial

    queued, trivial = in_process(alice(memory), scenario)
    assert queued["queued"] is True
    assert trivial["queued"] is False
    assert "nothing queued" in trivial["note"]
    assert memory.get(user_id="alice", agent="coder").facts == ()  # in the background
    assert memory.flush()
    learnt = [f.content for f in memory.get(user_id="alice", agent="coder").facts]
    assert any("Berlin" in content for content in learnt)
    assert memory.get(user_id="alice").facts == ()


def test_record_conversation_goes_through_the_clear_fence(memory: Memory) -> None:
    async def scenario(client: Client) -> Any:
        return ok(
            await client.call_tool("record_conversation", {"thread_id": "t1", "messages": BERLIN})
        )

    assert in_process(alice(memory), scenario)["queued"] is True
    memory.clear(user_id="alice", agent="coder")  # the waiting update is dropped, not learnt
    assert memory.flush()
    assert memory.get(user_id="alice", agent="coder").facts == ()


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([{"role": "wizard", "content": "hi"}], "unknown role 'wizard'"),
        ([{"content": "no role"}], "messages.0.role: Field required"),
        ("I live in Berlin", "messages: Input should be a valid list"),
        ([{"role": "user", "content": 7}], 'a list of parts such as {"type": "text"'),
    ],
)
def test_record_conversation_rejects_malformed_messages(
    memory: Memory, messages: Any, expected: str
) -> None:
    async def scenario(client: Client) -> str:
        return error(
            await client.call_tool("record_conversation", {"thread_id": "t1", "messages": messages})
        )

    assert expected in in_process(alice(memory), scenario)
    assert memory.status().pending == 0


def test_resources_give_the_export_document_of_the_session_user(memory: Memory) -> None:
    memory.add_fact("Prefers tea", user_id="alice")
    memory.add_fact("Writes Rust", user_id="alice", agent="coder")
    memory.add_fact("Secret of bob", user_id="bob")

    async def scenario(client: Client) -> tuple[Any, Any, Any, Any, str]:
        listed = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        shared = (await client.read_resource("memory://alice")).contents[0]
        coder = (await client.read_resource("memory://alice/coder")).contents[0]
        with pytest.raises(MCPError) as refused:
            await client.read_resource("memory://bob")
        return listed, templates, shared, coder, str(refused.value)

    listed, templates, shared, coder, refused = in_process(alice(memory), scenario)
    assert [str(r.uri) for r in listed] == ["memory://alice/coder"]
    assert {t.uri_template for t in templates} == {
        "memory://{user_id}",
        "memory://{user_id}/{agent}",
    }
    assert shared.mime_type == "application/json"
    assert decode(shared.text) == memory.export(user_id="alice")
    assert decode(coder.text) == memory.export(user_id="alice", agent="coder")
    assert "memory://bob" in refused
    assert "Secret of bob" not in refused


def test_the_default_user_is_tilde_in_resource_uris(memory: Memory) -> None:
    memory.add_fact("Prefers tea")

    async def scenario(client: Client) -> Any:
        listed = (await client.list_resources()).resources
        return listed, (await client.read_resource("memory://~")).contents[0]

    listed, document = in_process(build_server(memory, binding=Binding()), scenario)
    assert [str(r.uri) for r in listed] == ["memory://~"]
    assert decode(document.text)["facts"][0]["content"] == "Prefers tea"


def test_an_id_with_reserved_characters_round_trips_through_its_uri(memory: Memory) -> None:
    user = "李雷 / team#1"
    memory.add_fact("Likes dumplings", user_id=user)

    async def scenario(client: Client) -> Any:
        uri = str((await client.list_resources()).resources[0].uri)
        return uri, (await client.read_resource(uri)).contents[0]

    uri, document = in_process(build_server(memory, binding=Binding(user)), scenario)
    assert uri == "memory://%E6%9D%8E%E9%9B%B7%20%2F%20team%231"
    assert decode(document.text)["facts"][0]["content"] == "Likes dumplings"


def test_a_server_without_a_binding_refuses_every_tool(memory: Memory) -> None:
    async def scenario(client: Client) -> str:
        return error(await client.call_tool("list_facts", {}))

    assert "no user is bound" in in_process(build_server(memory), scenario)


def test_the_memory_may_be_given_as_a_provider(memory: Memory) -> None:
    calls = []

    def provider() -> Memory:
        calls.append(1)
        return memory

    async def scenario(client: Client) -> Any:
        return ok(await client.call_tool("remember", {"content": "Prefers tea"}))

    in_process(build_server(provider, binding=ALICE), scenario)
    assert calls
    assert len(memory.get(user_id="alice", agent="coder").facts) == 1


def test_history_tells_what_the_tools_changed_newest_first(memory: Memory) -> None:
    memory.add_fact("Bob's own fact", user_id="bob", agent="coder")

    async def scenario(client: Client) -> tuple[Any, Any, Any, str]:
        fact = ok(await client.call_tool("remember", {"content": "Lives in Paris"}))["fact"]
        other = ok(await client.call_tool("remember", {"content": "Plays chess"}))["fact"]
        ok(
            await client.call_tool(
                "update_fact", {"fact_id": fact["id"], "content": "Lives in Lyon"}
            )
        )
        ok(await client.call_tool("forget", {"fact_id": fact["id"]}))
        every = ok(await client.call_tool("history", {}))["events"]
        one = ok(await client.call_tool("history", {"fact_id": fact["id"]}))["events"]
        latest = ok(await client.call_tool("history", {"limit": 1}))["events"]
        bad = error(await client.call_tool("history", {"limit": 0}))
        assert other["id"] in {event.get("factId") for event in every}
        return every, one, latest, bad

    every, one, latest, bad = in_process(alice(memory), scenario)
    assert [event["kind"] for event in one] == ["removed", "edited", "added"]
    assert {event["actor"] for event in one} == {"manual"}
    assert one[1]["before"] == "Lives in Paris"
    assert one[1]["after"] == "Lives in Lyon"
    assert len(every) == 4
    assert "Bob's own fact" not in str(every)
    assert latest == every[:1]
    assert "limit" in bad
    assert [e.to_dict() for e in memory.history(user_id="alice", agent="coder")] == every
