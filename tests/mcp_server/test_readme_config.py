"""The README's ``mcpServers`` snippets work as written: the stdio entry starts a server an
MCP client can use (command, args and env as given, the home moved to a temporary
folder), and the HTTP entry has the shape the endpoint expects."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_helpers import child_env, readme_entries, run

from memfold.mcp import TOOL_NAMES


def test_the_readme_shows_a_stdio_and_an_http_entry() -> None:
    kinds = sorted("command" if "command" in entry else "url" for entry in readme_entries())
    assert kinds == ["command", "url"]


@pytest.mark.slow
def test_the_stdio_entry_starts_a_working_server(tmp_path: Path) -> None:
    (entry,) = [e for e in readme_entries() if "command" in e]
    assert entry["command"] == "memfold"
    args = [str(tmp_path / "home") if a.endswith("/.memfold") else a for a in entry["args"]]
    env = {k: v for k, v in entry["env"].items() if k != "MEMFOLD_LLM"}  # no model here
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memfold.cli", *args], env=child_env(**env)
    )

    async def scenario() -> list[str]:
        with (tmp_path / "stderr.log").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                await client.call_tool("remember", {"content": "Prefers tea"})
                return [tool.name for tool in (await client.list_tools()).tools]

    assert run(scenario) == list(TOOL_NAMES)
    assert (tmp_path / "home").is_dir()


def test_the_http_entry_names_the_endpoint_and_a_bearer_key() -> None:
    (entry,) = [e for e in readme_entries() if "url" in e]
    url = urlsplit(entry["url"])
    assert url.path == "/mcp"
    assert set(parse_qs(url.query)) <= {"user", "agent"}
    assert entry["headers"]["Authorization"].startswith("Bearer ")
