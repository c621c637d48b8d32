"""The MCP server as clients see it: start-up of ``memfold mcp``, tool latency over stdio,
over streamable HTTP in process and through a real ``memfold serve`` (uvicorn on
loopback, the REST API's keys), and writes lost when two ``memfold mcp`` processes, or
two clients of a two-worker ``memfold serve``, write to one home at once.

    .venv/bin/python benchmarks/run.py mcp
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from starlette.requests import Request

from memfold import Memory
from memfold.mcp import Binding, bind, build_server, http_app
from memfold.server.testing import ServeProcess

KEY = "bench-key-0123456789abcdef"


@asynccontextmanager
async def _stdio(home: Path, storage: str = "json") -> AsyncIterator[Client]:
    argv = ["-m", "memfold.cli", "--home", str(home), "--user", "alice", "mcp"]
    env = {"MEMFOLD_STORAGE": storage, "PATH": "/usr/bin:/bin"}
    params = StdioServerParameters(command=sys.executable, args=argv, env=env)
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            yield client


async def _timed(calls: int, call: Callable[[int], Awaitable[Any]]) -> list[float]:
    samples = []
    for i in range(calls):
        started = time.perf_counter()
        result = await call(i)
        samples.append((time.perf_counter() - started) * 1000)
        if getattr(result, "is_error", False):
            raise RuntimeError(f"tool error: {result.content}")
    return samples


async def _tool_latencies(client: Client, calls: int) -> dict[str, list[float]]:
    return {
        "remember": await _timed(
            calls, lambda i: client.call_tool("remember", {"content": f"Knows benchmark fact {i}"})
        ),
        "recall": await _timed(
            calls, lambda i: client.call_tool("recall", {"query": f"benchmark fact {i}"})
        ),
        "get_context": await _timed(calls, lambda i: client.call_tool("get_context", {})),
    }


def _p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1]


def _rows(transport: str, latencies: dict[str, list[float]]) -> list[dict[str, Any]]:
    rows = []
    for tool, samples in latencies.items():
        rows.append({
            "benchmark": f"MCP {transport}: {tool} median / p95",
            "value": statistics.median(samples),
            "unit": f"ms (p95 {_p95(samples):.1f} ms, {len(samples)} calls)",
            "target": "",
            "reference": "",
        })  # fmt: skip
    return rows


def _stdio_run(calls: int) -> list[dict[str, Any]]:
    async def scenario() -> tuple[float, dict[str, list[float]]]:
        with tempfile.TemporaryDirectory() as home:
            started = time.perf_counter()
            async with _stdio(Path(home)) as client:
                await client.list_tools()
                ready = time.perf_counter() - started
                return ready, await _tool_latencies(client, calls)

    ready, latencies = anyio.run(scenario)
    start = {
        "benchmark": "memfold mcp: spawn to first answer (stdio)",
        "value": ready * 1000,
        "unit": "ms",
        "target": "",
        "reference": "",
    }
    return [start, *_rows("stdio", latencies)]


def _resolve(request: Request) -> Binding:
    return bind(admin=False, user_id="alice", query=request.query_params)


def _http_run(calls: int) -> list[dict[str, Any]]:
    async def scenario() -> dict[str, list[float]]:
        with tempfile.TemporaryDirectory() as home, Memory(home=home) as mem:
            app = http_app(build_server(mem), _resolve)
            http = httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app),
                base_url="http://bench",
                headers={"Authorization": f"Bearer {KEY}"},
            )
            async with (
                app.router.lifespan_context(app),
                Client(streamable_http_client("http://bench/mcp", http_client=http)) as client,
            ):
                return await _tool_latencies(client, calls)

    return _rows("HTTP (in-process ASGI)", anyio.run(scenario))


def _serve_run(calls: int) -> list[dict[str, Any]]:
    async def scenario(url: str) -> dict[str, list[float]]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
        ):
            return await _tool_latencies(client, calls)

    with (
        tempfile.TemporaryDirectory() as home,
        ServeProcess(home=home, env={"MEMFOLD_API_KEYS": f"user:alice:{KEY}"}) as server,
    ):
        latencies = anyio.run(scenario, server.url)
    return _rows("HTTP (memfold serve, loopback)", latencies)


def _serve_workers(writes: int) -> dict[str, Any]:
    """Two clients writing at once through ``memfold serve --workers 2`` on one SQLite home."""

    async def scenario(url: str) -> float:
        async def writer(number: int) -> None:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}) as http,
                Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
            ):
                for i in range(writes):
                    result = await client.call_tool(
                        "remember", {"content": f"Client {number} item {i}"}
                    )
                    if result.is_error:
                        raise RuntimeError(f"tool error: {result.content}")

        started = time.perf_counter()
        async with anyio.create_task_group() as both:
            both.start_soon(writer, 0)
            both.start_soon(writer, 1)
        return time.perf_counter() - started

    env = {"MEMFOLD_API_KEYS": f"user:alice:{KEY}", "MEMFOLD_STORAGE": "sqlite"}
    with tempfile.TemporaryDirectory() as home:
        with ServeProcess(home=home, env=env, workers=2) as server:
            elapsed = anyio.run(scenario, server.url)
        with Memory(home=home, storage="sqlite", max_facts=10_000) as mem:
            kept = len(mem.get(user_id="alice").facts)
    return {
        "benchmark": f"memfold serve --workers 2 (SQLite), 2 MCP clients × {writes} remember: lost",
        "value": 2 * writes - kept,
        "unit": f"writes lost ({elapsed:.1f} s)",
        "target": "0",
        "reference": "",
    }


def _two_processes(writes: int, storage: str) -> dict[str, Any]:
    async def scenario(home: Path) -> float:
        async def writer(number: int) -> None:
            async with _stdio(home, storage) as client:
                for i in range(writes):
                    await client.call_tool("remember", {"content": f"Writer {number} item {i}"})

        started = time.perf_counter()
        async with anyio.create_task_group() as both:
            both.start_soon(writer, 0)
            both.start_soon(writer, 1)
        return time.perf_counter() - started

    with tempfile.TemporaryDirectory() as home:
        elapsed = anyio.run(scenario, Path(home))
        with Memory(home=home, storage=storage, max_facts=10_000) as mem:
            kept = len(mem.get(user_id="alice").facts)
    lost = 2 * writes - kept
    return {
        "benchmark": f"2 × memfold mcp on one {storage} home, {2 * writes} remember calls: lost",
        "value": lost,
        "unit": f"writes lost ({elapsed:.1f} s incl. start-up)",
        "target": "0",
        "reference": "reference MCP memory server loses writes (issue 19; not run here)",
    }


def run(quick: bool) -> list[dict[str, Any]]:
    calls = 20 if quick else 100
    writes = 20 if quick else 45  # two writers stay within max_facts (100)
    return [
        *_stdio_run(calls),
        *_http_run(calls),
        *_serve_run(calls),
        _serve_workers(writes),
        _two_processes(writes, "json"),
        _two_processes(writes, "sqlite"),
    ]
