"""``memfold mcp`` as an MCP client runs it: a child process on stdio, driven by the SDK's
stdio client; the user comes from the command line or the config; what was handed over
is learnt when the client goes away, however it ends the process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_helpers import BERLIN, child_env, decode, error, mcp_command, ok, run, text

from memfold import Memory, MemoryConfig
from memfold.errors import ConfigError
from memfold.mcp import TOOL_NAMES
from memfold.mcp.cli import stdio_config

pytestmark = pytest.mark.slow


def _stdio(argv: list[str], errlog: IO[str], **env: str) -> Client:
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=child_env(**env))
    return Client(stdio_client(params, errlog=errlog))


def test_a_client_lists_and_calls_every_tool_over_stdio(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory(home=home) as mem:
        seeded = mem.add_fact("Lives in Paris", user_id="alice", agent="coder")

    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        with (tmp_path / "stderr.log").open("w") as errlog:
            async with _stdio(
                mcp_command(home, "--user", "alice", "--agent", "coder"), errlog
            ) as c:
                seen["tools"] = [tool.name for tool in (await c.list_tools()).tools]
                seen["remember"] = ok(await c.call_tool("remember", {"content": "Prefers tea"}))
                seen["recall"] = ok(await c.call_tool("recall", {"query": "tea"}))
                seen["list"] = ok(await c.call_tool("list_facts", {}))
                seen["update"] = ok(
                    await c.call_tool(
                        "update_fact", {"fact_id": seeded.id, "content": "Lives in Lyon"}
                    )
                )
                seen["context"] = text(await c.call_tool("get_context", {}))
                seen["forget"] = ok(await c.call_tool("forget", {"fact_id": seeded.id}))
                seen["refused"] = error(await c.call_tool("forget", {"fact_id": seeded.id}))
                seen["history"] = ok(await c.call_tool("history", {"fact_id": seeded.id}))
                seen["record"] = ok(
                    await c.call_tool(
                        "record_conversation", {"thread_id": "t1", "messages": BERLIN}
                    )
                )
                seen["resource"] = (await c.read_resource("memory://alice/coder")).contents[0]
        return seen

    seen = run(scenario)
    assert seen["tools"] == list(TOOL_NAMES)
    tea = seen["remember"]["fact"]
    assert [hit["fact"]["id"] for hit in seen["recall"]["hits"]] == [tea["id"]]
    assert {f["id"] for f in seen["list"]["facts"]} == {seeded.id, tea["id"]}
    assert seen["update"]["fact"]["content"] == "Lives in Lyon"
    assert "Lives in Lyon" in seen["context"]
    assert "Prefers tea" in seen["context"]
    assert seen["forget"] == {"forgotten": seeded.id}
    assert seeded.id in seen["refused"]
    assert [e["kind"] for e in seen["history"]["events"]] == ["removed", "edited", "added"]
    assert seen["record"]["queued"] is True
    assert decode(seen["resource"].text)["facts"][0]["content"] == "Prefers tea"
    with Memory(home=home, queue="sqlite") as mem:  # what the child left queued, if anything
        mem.flush()
        learnt = [f.content for f in mem.get(user_id="alice", agent="coder").facts]
    assert "Prefers tea" in learnt
    assert "Lives in Lyon" not in learnt
    assert any("Berlin" in content for content in learnt)


def test_the_user_and_agent_come_from_the_config_unless_given(tmp_path: Path) -> None:
    home = tmp_path / "home"
    section = json.dumps({"user_id": "bob", "agent": "desk"})

    async def scenario(argv: list[str], content: str) -> None:
        with (tmp_path / "stderr.log").open("a") as errlog:
            async with _stdio(argv, errlog, MEMFOLD_MCP=section) as client:
                ok(await client.call_tool("remember", {"content": content}))

    run(lambda: scenario(mcp_command(home), "Configured user"))
    run(lambda: scenario(mcp_command(home, "--user", "carol"), "Named on the command line"))
    with Memory(home=home) as mem:
        assert [f.content for f in mem.get(user_id="bob", agent="desk").facts] == [
            "Configured user"
        ]
        assert [f.content for f in mem.get(user_id="carol", agent="desk").facts] == [
            "Named on the command line"
        ]


def _rpc(stdin: IO[str], stdout: IO[str], message: dict[str, Any]) -> dict[str, Any]:
    stdin.write(json.dumps(message) + "\n")
    stdin.flush()
    while True:
        answer: dict[str, Any] = json.loads(stdout.readline())
        if answer.get("id") == message["id"]:
            return answer


@pytest.mark.parametrize("queue", ["memory", "sqlite"])
def test_sigterm_stops_the_server_after_learning_what_was_handed_over(
    tmp_path: Path, queue: str
) -> None:
    home = tmp_path / "home"
    with (
        (tmp_path / "stderr.log").open("w") as errlog,
        subprocess.Popen(
            mcp_command(home, "--user", "alice"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            text=True,
            env=child_env(MEMFOLD_QUEUE=queue, MEMFOLD_DEBOUNCE_SECONDS="600"),
        ) as process,
    ):
        assert process.stdin is not None
        assert process.stdout is not None
        try:
            hello = {"protocolVersion": "2025-06-18", "capabilities": {},
                     "clientInfo": {"name": "test", "version": "0"}}  # fmt: skip
            assert "result" in _rpc(
                process.stdin, process.stdout,
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
            )  # fmt: skip
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            process.stdin.write(json.dumps(initialized) + "\n")
            call = {"name": "record_conversation",
                    "arguments": {"thread_id": "t1", "messages": BERLIN}}  # fmt: skip
            answer = _rpc(
                process.stdin, process.stdout,
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
            )  # fmt: skip
            assert answer["result"]["structuredContent"]["queued"] is True
            process.send_signal(signal.SIGTERM)  # the update is not due for ten minutes
            assert process.wait(timeout=60) == 0
        finally:
            if process.poll() is None:
                process.kill()
    with Memory(home=home, queue="memory") as mem:
        learnt = [f.content for f in mem.get(user_id="alice").facts]
    assert any("Berlin" in content for content in learnt)


def test_the_durable_queue_is_the_default_on_stdio(tmp_path: Path) -> None:
    assert stdio_config(MemoryConfig.build(home=tmp_path)).queue == "sqlite"
    given = MemoryConfig.build(home=tmp_path, env={"MEMFOLD_QUEUE": "memory"})
    assert stdio_config(given).queue == "memory"
    assert stdio_config(MemoryConfig.build(home=tmp_path, storage="memory")).queue == "memory"


def test_without_the_sdk_the_command_names_the_extra_to_install(tmp_path: Path) -> None:
    blocked = (
        "import sys; sys.modules['mcp'] = None\n"
        "from memfold.cli import main\n"
        f"main(['--home', {str(tmp_path)!r}, 'mcp'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, timeout=60, check=False,
        env=child_env(),
    )  # fmt: skip
    assert done.returncode == 2
    assert "pip install 'memfold[mcp]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_bad_user_id_stops_the_server_at_start_with_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        mcp_command(tmp_path / "home", "--user", ""), capture_output=True, text=True,
        timeout=60, check=False, env=child_env(), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--user needs an id" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_mcp_section_comes_from_yaml_json_or_nested_variables(tmp_path: Path) -> None:
    config_file = tmp_path / "memfold.yaml"
    config_file.write_text("mcp:\n  user_id: alice\n  agent: desk\n", encoding="utf-8")
    assert MemoryConfig.build(config_file, env={}).mcp.user_id == "alice"
    nested = MemoryConfig.build(env={"MEMFOLD_MCP__USER_ID": "bob", "MEMFOLD_MCP__AGENT": "cli"})
    assert (nested.mcp.user_id, nested.mcp.agent) == ("bob", "cli")
    assert MemoryConfig.build(env={"MEMFOLD_MCP": '{"user_id": "carol"}'}).mcp.user_id == "carol"
    with pytest.raises(ConfigError, match=r"mcp\.user_id"):
        MemoryConfig.build(env={"MEMFOLD_MCP__USER_ID": ""})
