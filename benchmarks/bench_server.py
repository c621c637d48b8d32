"""Load test of ``memfold serve``: concurrent clients recording and reading against
several uvicorn workers on one PostgreSQL (store and durable queue), then a count of
what was lost.

    .venv/bin/python benchmarks/bench_server.py                  # 50 clients, 30 s, 2 workers
    .venv/bin/python benchmarks/bench_server.py --clients 10 --seconds 5
    .venv/bin/python benchmarks/run.py server --quick            # 10 clients, 5 s

Each client is one user's agent: it keeps one growing thread and records the whole
thread after every exchange (``POST …/conversations``), adds a fact by hand now and then,
and reads as an agent and a person do (context, memory, search). When the time is up the
queue is drained and every client's thread watermark must stand at the last message it
recorded, and every fact the server confirmed with 201 must be stored: anything else is
counted as lost. PostgreSQL comes from ``MEMFOLD_TEST_POSTGRES_DSN`` or an embedded server.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from memfold.server.testing import ServeProcess

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _postgres import postgres_server

ADMIN_KEY = "bench-admin-key-0123456789abcdef"
CITIES = ["Lisbon", "Porto", "Berlin", "Osaka", "Lyon", "Quito", "Accra", "Perth"]


@dataclass
class _Client:
    number: int
    user: str
    thread: list[dict[str, str]] = field(default_factory=list)
    last_recorded: str | None = None  # id of the last message of the last accepted record
    facts_confirmed: list[str] = field(default_factory=list)
    refused: int = 0


@dataclass
class _Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))


async def _call(
    http: httpx.AsyncClient, stats: _Stats, kind: str, method: str, url: str, **kw: Any
) -> httpx.Response | None:
    started = time.perf_counter()
    try:
        response = await http.request(method, url, **kw)
    except httpx.HTTPError as exc:
        stats.errors[f"{kind}: {type(exc).__name__}"] += 1
        return None
    stats.latencies[kind].append(time.perf_counter() - started)
    if response.status_code >= 400:
        stats.errors[f"{kind}: {response.status_code}"] += 1
    return response


async def _one_client(
    http: httpx.AsyncClient, client: _Client, stats: _Stats, until: float, rng: random.Random
) -> None:
    base = f"/api/v1/users/{client.user}"
    turn = 0
    while time.monotonic() < until:
        roll = rng.random()
        if roll < 0.4:
            turn += 1
            city = rng.choice(CITIES)
            client.thread += [
                {"role": "user", "content": f"I live in {city} and I walk to work, day {turn}.",
                 "id": f"c{client.number}-u{turn}"},
                {"role": "assistant", "content": f"Noted: {city}, walking (day {turn}).",
                 "id": f"c{client.number}-a{turn}"},
            ]  # fmt: skip
            body = {"thread_id": f"thread-{client.number}", "messages": client.thread}
            answer = await _call(http, stats, "record", "POST", f"{base}/conversations", json=body)
            if answer is not None and answer.status_code == 202:
                if answer.json()["queued"]:
                    client.last_recorded = client.thread[-1]["id"]
                else:
                    client.refused += 1
        elif roll < 0.5:
            content = f"Owns bicycle number {client.number}-{turn}-{rng.randrange(10**9)}"
            answer = await _call(
                http, stats, "add fact", "POST", f"{base}/facts", json={"content": content}
            )
            if answer is not None and answer.status_code == 201:
                client.facts_confirmed.append(content)
        elif roll < 0.7:
            query = {"query": "where do I live?", "max_tokens": 500}
            await _call(http, stats, "context", "GET", f"{base}/context", params=query)
        elif roll < 0.85:
            await _call(http, stats, "memory", "GET", f"{base}/memory")
        else:
            await _call(http, stats, "search", "GET", f"{base}/search", params={"q": "bicycle"})


async def _drain(http: httpx.AsyncClient, timeout: float) -> float:
    """Wait until no replica has pending or running updates; seconds it took."""
    started = time.monotonic()
    quiet = 0
    while time.monotonic() - started < timeout:
        status = (await http.get("/api/v1/status")).json()["queue"]
        quiet = quiet + 1 if status["pending"] == 0 and status["in_flight"] == 0 else 0
        if quiet >= 5:  # several polls, so both replicas answered empty
            break
        await asyncio.sleep(0.5)
    return time.monotonic() - started


async def _lost(http: httpx.AsyncClient, clients: list[_Client]) -> tuple[int, int]:
    """(records lost, confirmed facts lost)."""
    records = facts = 0
    for client in clients:
        document = (await http.get(f"/api/v1/users/{client.user}/memory")).json()
        if client.last_recorded is not None:
            mark = document.get("watermarks", {}).get(f"thread-{client.number}", {})
            if mark.get("messageKey") != f"id:{client.last_recorded}":
                records += 1
        stored = {fact["content"] for fact in document["facts"]}
        facts += sum(1 for content in client.facts_confirmed if content not in stored)
    return records, facts


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _load(url: str, clients_n: int, seconds: float, prefix: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    limits = httpx.Limits(max_connections=clients_n + 5, max_keepalive_connections=clients_n + 5)
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=60.0, limits=limits
    ) as http:
        clients = [_Client(n, f"{prefix}-user-{n}") for n in range(clients_n)]
        stats = _Stats()
        until = time.monotonic() + seconds
        started = time.perf_counter()
        await asyncio.gather(
            *(_one_client(http, c, stats, until, random.Random(c.number)) for c in clients)
        )
        elapsed = time.perf_counter() - started
        drain_seconds = await _drain(http, timeout=180.0)
        lost_records, lost_facts = await _lost(http, clients)
    every = [v for values in stats.latencies.values() for v in values]
    return {
        "requests": len(every),
        "elapsed": elapsed,
        "p50_ms": statistics.median(every) * 1000 if every else float("nan"),
        "p95_ms": _percentile(every, 0.95) * 1000,
        "by_kind": {
            kind: (len(v), statistics.median(v) * 1000, _percentile(v, 0.95) * 1000)
            for kind, v in sorted(stats.latencies.items())
        },
        "errors": dict(stats.errors),
        "records": sum(1 for c in clients if c.last_recorded),
        "refused": sum(c.refused for c in clients),
        "facts": sum(len(c.facts_confirmed) for c in clients),
        "lost_records": lost_records,
        "lost_facts": lost_facts,
        "drain_seconds": drain_seconds,
    }


def measure(clients: int, seconds: float, workers: int) -> dict[str, Any] | None:
    with (
        tempfile.TemporaryDirectory(prefix="memfold-bench-") as tmp,
        postgres_server(Path(tmp), "bench_server") as dsn,
    ):
        if dsn is None:
            return None
        config = {
            "home": str(Path(tmp) / "home"),
            "storage": "postgres",
            "queue": "postgres",
            "dsn": dsn,
            "debounce_seconds": 0.5,
            "max_wait_seconds": 2.0,
            "workers": 4,
            "max_facts": 10_000,
            "server": {"api_keys_env": "BENCH_KEYS"},
        }
        config_file = Path(tmp) / "memfold.yaml"
        config_file.write_text(yaml.safe_dump(config), encoding="utf-8")
        env = {"BENCH_KEYS": f"admin:{ADMIN_KEY}"}
        with ServeProcess(config_file=config_file, workers=workers, env=env) as server:
            # one client alone first: what a request costs here without contention
            baseline = asyncio.run(_load(server.url, 1, min(5.0, seconds), "alone"))
            result = asyncio.run(_load(server.url, clients, seconds, "load"))
            log = server.output()
            if "Traceback" in log or "ERROR" in log:
                print(f"# bench_server: the server logged errors:\n{log[-3000:]}", file=sys.stderr)
        result.update(clients=clients, seconds=seconds, workers=workers, baseline=baseline)
        return result


def _print(result: dict[str, Any]) -> None:
    print(
        f"memfold serve load: {result['clients']} clients, {result['seconds']:.0f} s, "
        f"{result['workers']} workers, PostgreSQL store + queue"
    )
    print(f"{'requests':<12}{'p50 ms':>10}{'p95 ms':>10}")
    for kind, (count, p50, p95) in result["by_kind"].items():
        print(f"{kind:<12}{p50:>10.1f}{p95:>10.1f}   ({count:,} requests)")
    rate = result["requests"] / result["elapsed"]
    print(
        f"{'all':<12}{result['p50_ms']:>10.1f}{result['p95_ms']:>10.1f}   "
        f"({result['requests']:,} requests, {rate:.0f}/s)"
    )
    print(
        f"records accepted: {result['records']} threads ({result['refused']} refused), "
        f"lost: {result['lost_records']}; facts confirmed: {result['facts']}, "
        f"lost: {result['lost_facts']}; queue drained in {result['drain_seconds']:.1f} s"
    )
    alone = result["baseline"]
    print(
        f"one client alone first: p50 {alone['p50_ms']:.1f} ms, p95 {alone['p95_ms']:.1f} ms "
        f"({alone['requests'] / alone['elapsed']:.0f} requests/s); load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the end"
    )
    if result["errors"]:
        print("errors: " + ", ".join(f"{k} ×{v}" for k, v in sorted(result["errors"].items())))


def run(quick: bool) -> list[dict[str, Any]]:
    """Rows for ``benchmarks/run.py``."""
    result = measure(10, 5.0, 2) if quick else measure(50, 30.0, 2)
    if result is None:
        return []
    _print(result)
    label = f"serve {result['clients']} clients × {result['seconds']:.0f} s, 2 workers, PG"
    return [
        {"benchmark": f"{label}: p50", "value": result["p50_ms"], "unit": "ms",
         "target": "", "reference": ""},
        {"benchmark": f"{label}: p95", "value": result["p95_ms"], "unit": "ms",
         "target": "", "reference": ""},
        {"benchmark": f"{label}: records + facts lost",
         "value": result["lost_records"] + result["lost_facts"], "unit": "",
         "target": "0", "reference": ""},
    ]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    result = measure(args.clients, args.seconds, args.workers)
    if result is None:
        return 1
    _print(result)
    return 0 if result["lost_records"] == 0 and result["lost_facts"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
