"""Two ``memfold mcp`` processes on one store, writing at the same time (each with several
calls in flight): nothing is lost, on the JSON home and on SQLite. This is where the
reference MCP memory server silently drops writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_helpers import child_env, mcp_command, ok, run

from memfold import Memory

pytestmark = pytest.mark.slow

FACTS_PER_PROCESS = 15
EDITS_PER_PROCESS = 5
CONVERSATIONS = (
    [{"role": "user", "content": "I am learning Japanese."},
     {"role": "assistant", "content": "がんばって!"}],
    [{"role": "user", "content": "I prefer tea over coffee."},
     {"role": "assistant", "content": "Noted."}],
)  # fmt: skip


async def _writer(
    client: Client, number: int, own_fact: str, ready: list[anyio.Event], go: anyio.Event
) -> None:
    await client.list_tools()
    ready[number].set()
    await go.wait()  # both processes are up: start together
    async with anyio.create_task_group() as calls:
        for i in range(FACTS_PER_PROCESS):
            content = f"Process {number} noted item {i} about subject {number}x{i}"
            calls.start_soon(client.call_tool, "remember", {"content": content})
        calls.start_soon(
            client.call_tool,
            "record_conversation",
            {"thread_id": f"thread-{number}", "messages": CONVERSATIONS[number]},
        )
        for edit in range(EDITS_PER_PROCESS):  # sequential: the last edit must win
            ok(await client.call_tool(
                "update_fact", {"fact_id": own_fact, "content": f"Edit {edit} by {number}"}
            ))  # fmt: skip


@pytest.mark.parametrize("storage", ["json", "sqlite"])
def test_two_stdio_servers_on_one_store_lose_nothing(tmp_path: Path, storage: str) -> None:
    home = tmp_path / "home"
    with Memory(home=home, storage=storage) as mem:
        own = [mem.add_fact(f"Seed {n}", user_id="alice").id for n in range(2)]

    async def scenario() -> None:
        ready = [anyio.Event(), anyio.Event()]
        go = anyio.Event()
        with (tmp_path / "stderr.log").open("w") as errlog:

            async def one(number: int) -> None:
                command, *args = mcp_command(home, "--user", "alice")
                params = StdioServerParameters(
                    command=command, args=args, env=child_env(MEMFOLD_STORAGE=storage)
                )
                async with Client(stdio_client(params, errlog=errlog)) as client:
                    await _writer(client, number, own[number], ready, go)

            async with anyio.create_task_group() as both:
                both.start_soon(one, 0)
                both.start_soon(one, 1)
                for event in ready:
                    await event.wait()
                go.set()

    run(scenario)
    with Memory(home=home, storage=storage, queue="sqlite") as mem:
        mem.flush()  # whatever a child left in the durable queue
        facts = {f.content: f for f in mem.get(user_id="alice").facts}
    expected: set[str] = {
        f"Process {n} noted item {i} about subject {n}x{i}"
        for n in range(2)
        for i in range(FACTS_PER_PROCESS)
    }
    assert expected <= set(facts), sorted(expected - set(facts))
    last: dict[str, Any] = {fact.id: fact.content for fact in facts.values()}
    assert last[own[0]] == f"Edit {EDITS_PER_PROCESS - 1} by 0"
    assert last[own[1]] == f"Edit {EDITS_PER_PROCESS - 1} by 1"
    assert {"Learning Japanese", "Prefers tea over coffee"} <= set(facts)
    assert len(facts) == 2 * FACTS_PER_PROCESS + 2 + 2
