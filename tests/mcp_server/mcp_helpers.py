"""Helpers for the MCP server tests: sessions driven by the SDK's own client."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from starlette.applications import Starlette

T = TypeVar("T")

README = Path(__file__).resolve().parents[2] / "README.md"

#: A raw ``initialize`` request, for what the transport answers before any tool runs.
INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "test", "version": "0"}},
}  # fmt: skip
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}

#: A conversation the offline rule extractor learns "Lives in Berlin" from.
BERLIN = [
    {"role": "user", "content": "I live in Berlin and I work as a nurse."},
    {"role": "assistant", "content": "Thanks, noted."},
]


def run(scenario: Callable[[], Awaitable[T]]) -> T:
    """Run an async scenario from a synchronous test."""
    return anyio.run(scenario)


def in_process(server: Any, scenario: Callable[[Client], Awaitable[T]]) -> T:
    """``scenario(client)`` with an SDK client connected to ``server`` in this process."""

    async def go() -> T:
        async with Client(server) as client:
            return await scenario(client)

    return run(go)


def text(result: CallToolResult) -> str:
    """The text a tool answered (what the model reads)."""
    return "".join(getattr(part, "text", "") for part in result.content)


def ok(result: CallToolResult) -> dict[str, Any]:
    """The structured answer of a tool call that must have succeeded."""
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    return result.structured_content


def error(result: CallToolResult) -> str:
    """The message of a tool call that must have failed as a tool error."""
    assert result.is_error, f"expected a tool error, got {result.structured_content}"
    return text(result)


def mcp_command(home: Path, *args: str) -> list[str]:
    """argv of ``memfold --home HOME ARGS... mcp`` run with this interpreter."""
    return [sys.executable, "-m", "memfold.cli", "--home", str(home), *args, "mcp"]


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a ``memfold mcp`` child: this one, without MEMFOLD_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    env.update(extra)
    return env


def decode(resource_text: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(resource_text)
    return data


def readme_entries() -> list[dict[str, Any]]:
    """The ``mcpServers`` entries of the README's MCP section, as written."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## MCP server\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```json\n(.*?)```", section, re.S)
    return [entry for block in blocks for entry in json.loads(block)["mcpServers"].values()]


def http_client(app: Starlette, key: str | None, host: str = "testserver") -> httpx2.AsyncClient:
    """An HTTP client calling ``app`` in this process, with ``key`` as its bearer key."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app), base_url=f"http://{host}", headers=headers
    )


@asynccontextmanager
async def running(app: Starlette) -> AsyncIterator[None]:
    """``app`` between its startup and its shutdown (its lifespan)."""
    async with app.router.lifespan_context(app):
        yield


@asynccontextmanager
async def http_session(app: Starlette, key: str | None, query: str = "") -> AsyncIterator[Client]:
    """An SDK client on ``app``'s ``/mcp`` (plus ``query``), sending ``key``."""
    endpoint = f"http://testserver/mcp{query}"
    async with Client(streamable_http_client(endpoint, http_client=http_client(app, key))) as c:
        yield c


def initialize(
    app: Starlette,
    key: str | None,
    query: str = "",
    *,
    host: str = "testserver",
    headers: dict[str, str] | None = None,
    started: bool = True,
) -> httpx2.Response:
    """The answer of ``app`` (started, unless not ``started``) to a raw ``initialize``
    POST on ``/mcp`` (plus ``query``), sent with ``key`` and ``headers``."""

    async def scenario() -> httpx2.Response:
        async with http_client(app, key, host) as http:
            post = http.post(f"/mcp{query}", json=INIT, headers={**MCP_HEADERS, **(headers or {})})
            if not started:
                return await post
            async with running(app):
                return await post

    return run(scenario)
