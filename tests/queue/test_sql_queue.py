"""The durable queues (SQLite file, real PostgreSQL) in one process: replace and merge,
per-key debounce and max wait, urgent, version-checked completion, retries, backpressure,
leases, flush/close, restart. Deterministic: a FakeClock and ``run_due`` (``start=False``),
except the tests that check real worker threads, which wait on events, never sleep."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memfold import Memory, MemoryConfig
from memfold.errors import ConfigError, StorageError
from memfold.model import Message, Scope, Signals
from memfold.queue._payload import Payload, decode_payload, encode_payload, key_hash, scope_hash
from memfold.queue._sql import SqlQueue
from memfold.queue.base import Job, JobKey, UpdateQueue, job_key
from memfold.queue.clock import FakeClock
from memfold.queue.factory import lease_seconds_for, open_queue
from memfold.queue.memory import InProcessQueue
from memfold.queue.sqlite import QUEUE_FILE, SqliteQueue

WAIT = 10.0  # bound for real-thread synchronisation; only reached on failure
LEASE = 5.0

A = job_key("t1", "alice")
A2 = job_key("t2", "alice")
B = job_key("t3", "bob")


def msgs(*texts: str) -> tuple[Message, ...]:
    roles = ("user", "assistant")
    return tuple(Message(roles[i % 2], text, id=text) for i, text in enumerate(texts))


def texts(job: Job) -> list[str]:
    return [m.content for m in job.messages]


class Recorder:
    """A process callback recording each job and the clock time it ran."""

    def __init__(self, clock: FakeClock) -> None:
        self.jobs: list[Job] = []
        self.times: list[float] = []
        self.clock = clock
        self.lock = threading.Lock()

    def __call__(self, job: Job) -> object:
        with self.lock:
            self.jobs.append(job)
            self.times.append(self.clock.now())
        return None


class Crash(BaseException):
    """Stands in for a process dying mid-job: the queue records no outcome."""


Maker = Callable[..., SqlQueue]


@pytest.fixture(params=["sqlite", "postgres"])
def make_queue(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Maker]:
    """``make_queue(process, clock, **options)``: a queue (no threads) on one shared
    database per test; call it twice for two replicas."""
    opened: list[SqlQueue] = []
    dsn = request.getfixturevalue("postgres_dsn") if request.param == "postgres" else None

    def make(process: Callable[[Job], object], clock: FakeClock, **options: Any) -> SqlQueue:
        options.setdefault("lease_seconds", LEASE)
        queue: SqlQueue
        if dsn is None:
            queue = SqliteQueue(tmp_path / QUEUE_FILE, process, clock=clock, start=False, **options)
        else:
            from memfold.queue.postgres import PostgresQueue

            queue = PostgresQueue(dsn, process, clock=clock, start=False, **options)
        opened.append(queue)
        return queue

    yield make
    for queue in opened:
        queue.close(0)


def setup(make_queue: Maker, **options: Any) -> tuple[SqlQueue, Recorder, FakeClock]:
    clock = FakeClock(1000.0)
    recorder = Recorder(clock)
    return make_queue(recorder, clock, **options), recorder, clock


# --- payload -------------------------------------------------------------------------


def test_payload_round_trips_messages_ids_signals_and_urgency() -> None:
    payload = Payload(
        (Message("user", "héllo ? %s", id="m1"), Message("assistant", "ok")),
        Signals(correction=True),
        urgent=True,
    )
    assert decode_payload(encode_payload(payload)) == payload
    assert decode_payload({"messages": [], "signals": {}}) == Payload((), Signals())


def test_payload_decode_rejects_foreign_json() -> None:
    with pytest.raises(ValueError, match="not a memfold queue payload"):
        decode_payload('{"messages": [{"role": "system", "content": "x"}]}')
    with pytest.raises(ValueError, match="not a memfold queue payload"):
        decode_payload("[1, 2]")


def test_key_hash_tells_none_from_empty_and_scope_hash_ignores_thread() -> None:
    assert key_hash(("t", None, None)) != key_hash(("t", "", None))
    assert scope_hash(A) == scope_hash(A2) != scope_hash(B)


# --- replace, debounce, max wait, urgent ---------------------------------------------


def test_same_key_add_replaces_payload_and_merges_signals(make_queue: Maker) -> None:
    queue, rec, clock = setup(make_queue, debounce_seconds=10)
    assert queue.add(A, msgs("a", "b"), Signals(correction=True))
    assert queue.add(A, msgs("a", "b", "c", "d"), Signals(reinforcement=True))
    assert queue.status().pending == 1
    clock.advance(10)
    assert queue.run_due() == 1
    (job,) = rec.jobs
    assert texts(job) == ["a", "b", "c", "d"]
    assert job.signals == Signals(correction=True, reinforcement=True)
    assert job.attempt == 1
    assert job.enqueued_at == 1000.0
    assert queue.status().pending == 0


def test_each_key_has_its_own_debounce(make_queue: Maker) -> None:
    queue, rec, clock = setup(make_queue, debounce_seconds=10, max_wait_seconds=100)
    queue.add(A, msgs("a1", "a2"))
    clock.advance(6)
    queue.add(B, msgs("b1", "b2"))
    queue.add(A, msgs("a1", "a2", "a3", "a4"))  # A's timer restarts at 1006
    clock.advance(9.9)
    assert queue.run_due() == 0
    clock.advance(0.1)  # 1016: A due (1006 + 10), B due (1006 + 10)
    assert queue.run_due() == 2
    assert {j.key for j in rec.jobs} == {A, B}


def test_busy_key_still_runs_within_max_wait(make_queue: Maker) -> None:
    queue, rec, clock = setup(make_queue, debounce_seconds=10, max_wait_seconds=25)
    for step in range(4):  # records at 0, 8, 16, 24: debounce alone would wait until 34
        queue.add(A, msgs("u", f"v{step}"))
        assert queue.run_due() == 0
        clock.advance(8 if step < 3 else 0.9)
    assert queue.run_due() == 0  # 1024.9
    clock.advance(0.1)
    assert queue.run_due() == 1
    assert rec.times == [1025.0]
    assert texts(rec.jobs[0]) == ["u", "v0", "v1", "v2", "v3"]  # each record held a new turn


def test_records_of_only_the_newest_turn_are_merged_not_replaced(make_queue: Maker) -> None:
    """D5 on the durable queues: every exchange recorded on its own is kept."""
    queue, rec, clock = setup(make_queue, debounce_seconds=10, max_wait_seconds=25)
    for k in range(5):
        queue.add(A, (Message("user", f"fact {k}"), Message("assistant", "ok")))
    queue.add(A, (Message("user", "fact 4"), Message("assistant", "ok")))  # a repeat
    clock.advance(10)
    assert queue.run_due() == 1
    assert texts(rec.jobs[0]) == [text for k in range(5) for text in (f"fact {k}", "ok")]


def test_urgent_add_is_due_at_once_and_keeps_pending_messages(make_queue: Maker) -> None:
    queue, rec, _ = setup(make_queue, debounce_seconds=30)
    queue.add(A, msgs("a", "b", "c", "d"))
    queue.add(A, msgs("c", "d", "e", "f"), urgent=True)  # a, b about to be summarised away
    assert queue.run_due() == 1
    assert texts(rec.jobs[0]) == ["a", "b", "c", "d", "e", "f"]
    assert rec.jobs[0].urgent


def test_urgent_record_during_a_running_job_is_not_replaced_by_a_later_record(
    make_queue: Maker,
) -> None:
    clock = FakeClock(1000.0)
    seen: list[Job] = []
    queue: SqlQueue

    def process(job: Job) -> None:
        seen.append(job)
        if len(seen) == 1:  # while it runs: a, b about to be summarised away, then dropped
            queue.add(A, msgs("a", "b", "c", "d"), urgent=True)
            queue.add(A, msgs("c", "d", "e", "f"))

    queue = make_queue(process, clock, debounce_seconds=30)
    queue.add(A, msgs("a", "b"), urgent=True)
    assert queue.run_due() == 2  # the urgent record is due at once after the running job
    assert texts(seen[1]) == ["a", "b", "c", "d", "e", "f"]
    assert seen[1].urgent
    assert queue.status().pending == 0


def test_max_wait_counts_from_the_first_record_during_a_running_job(make_queue: Maker) -> None:
    clock = FakeClock(1000.0)
    seen: list[Job] = []
    queue: SqlQueue

    def process(job: Job) -> None:
        seen.append(job)
        if len(seen) == 1:  # records at 1000, 1008, 1016 while the job runs until 1017
            for step in (8, 8, 1):
                queue.add(A, msgs("u", f"v{step}"))
                clock.advance(step)

    queue = make_queue(process, clock, debounce_seconds=10, max_wait_seconds=20, lease_seconds=60)
    queue.add(A, msgs("u", "v"), urgent=True)
    assert queue.run_due() == 1
    clock.advance(2.9)
    assert queue.run_due() == 0
    clock.advance(0.1)  # 1020: the first record during the job + max wait
    assert queue.run_due() == 1
    assert seen[1].enqueued_at == 1000.0


# --- completion, retries, backpressure -----------------------------------------------


def test_completion_keeps_a_newer_version_queued(make_queue: Maker) -> None:
    clock = FakeClock(1000.0)
    seen: list[list[str]] = []
    queue: SqlQueue

    def process(job: Job) -> None:
        seen.append(texts(job))
        if len(seen) == 1:  # a record arrives while the job runs
            queue.add(A, msgs("a", "b", "c", "d"))

    queue = make_queue(process, clock, debounce_seconds=5)
    queue.add(A, msgs("a", "b"), urgent=True)
    assert queue.run_due() == 1
    assert queue.status().pending == 1  # the newer version stayed, lease cleared
    clock.advance(4.9)
    assert queue.run_due() == 0  # due by its own enqueue: now + debounce
    clock.advance(0.1)
    assert queue.run_due() == 1
    assert seen == [["a", "b"], ["a", "b", "c", "d"]]
    assert queue.status().pending == 0
    assert queue.status().processed == 2


def test_failed_job_backs_off_then_is_dropped_naming_the_key(
    make_queue: Maker, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(1000.0)
    attempts: list[int] = []

    def process(job: Job) -> None:
        attempts.append(job.attempt)
        raise RuntimeError("model unavailable")

    queue = make_queue(
        process, clock, debounce_seconds=0, retry_attempts=3, retry_backoff_seconds=2
    )
    queue.add(A, msgs("a", "b"))
    with caplog.at_level(logging.WARNING, logger="memfold.queue"):
        assert queue.run_due() == 1
        clock.advance(1.9)
        assert queue.run_due() == 0  # backoff 2 s
        clock.advance(0.1)
        assert queue.run_due() == 1
        clock.advance(3.9)
        assert queue.run_due() == 0  # backoff 4 s
        clock.advance(0.1)
        assert queue.run_due() == 1
    assert attempts == [1, 2, 3]
    status = queue.status()
    assert (status.pending, status.failed, status.retried, status.dropped) == (0, 3, 2, 1)
    assert status.last_error is not None
    assert "model unavailable" in status.last_error
    dropped = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(dropped) == 1
    assert "thread 't1', user 'alice'" in dropped[0].getMessage()


def test_error_marked_not_retryable_is_dropped_at_once(
    make_queue: Maker, caplog: pytest.LogCaptureFixture
) -> None:
    from memfold.llm.base import ChatModelError

    clock = FakeClock(1000.0)
    calls: list[int] = []

    def process(job: Job) -> None:
        calls.append(job.attempt)
        raise ChatModelError("401 invalid API key", status=401, retryable=False)

    queue = make_queue(process, clock, debounce_seconds=0, retry_attempts=3)
    queue.add(A, msgs("a", "b"))
    with caplog.at_level(logging.ERROR, logger="memfold.queue"):
        assert queue.run_due() == 1
        clock.advance(100)
        assert queue.run_due() == 0
    assert calls == [1]
    status = queue.status()
    assert (status.pending, status.failed, status.retried, status.dropped) == (0, 1, 0, 1)
    assert "not retryable" in caplog.text


def test_failure_with_a_newer_record_keeps_the_newer_payload_and_old_signals(
    make_queue: Maker,
) -> None:
    clock = FakeClock(1000.0)
    seen: list[Job] = []
    queue: SqlQueue

    def process(job: Job) -> None:
        seen.append(job)
        if len(seen) == 1:
            queue.add(A, msgs("a", "b", "c", "d"))
            raise RuntimeError("boom")

    queue = make_queue(process, clock, debounce_seconds=1, retry_backoff_seconds=2)
    queue.add(A, msgs("a", "b"), Signals(correction=True))
    clock.advance(1)
    assert queue.run_due() == 1
    clock.advance(1.9)
    assert queue.run_due() == 0  # the backoff holds even though the record was debounced
    clock.advance(0.1)
    assert queue.run_due() == 1
    assert texts(seen[1]) == ["a", "b", "c", "d"]
    assert seen[1].signals.correction
    assert seen[1].enqueued_at == 1000.0
    assert queue.status().dropped == 0


def test_backpressure_refuses_new_keys_but_admits_replacements(make_queue: Maker) -> None:
    queue, _, _ = setup(make_queue, max_pending=2)
    assert queue.add(A, msgs("a", "b"))
    assert queue.add(B, msgs("a", "b"))
    assert not queue.add(A2, msgs("a", "b"))
    assert queue.add(A, msgs("a", "b", "c", "d"))
    status = queue.status()
    assert (status.pending, status.rejected) == (2, 1)


# --- leases and scopes ---------------------------------------------------------------


def test_expired_lease_makes_a_crashed_job_claimable_again(make_queue: Maker) -> None:
    clock = FakeClock(1000.0)

    def crash(job: Job) -> None:
        raise Crash

    dead = make_queue(crash, clock, debounce_seconds=0)
    survivor_rec = Recorder(clock)
    survivor = make_queue(survivor_rec, clock, debounce_seconds=0)
    dead.add(A, msgs("a", "b"))
    with pytest.raises(Crash):
        dead.run_due()
    assert survivor.status().in_flight == 1
    clock.advance(LEASE - 0.1)
    assert survivor.run_due() == 0  # the lease is still live
    clock.advance(0.2)
    assert survivor.run_due() == 1
    assert texts(survivor_rec.jobs[0]) == ["a", "b"]
    assert survivor.status().pending == 0
    assert survivor.status().in_flight == 0


def test_claim_skips_keys_whose_scope_has_a_live_lease(make_queue: Maker) -> None:
    clock = FakeClock(1000.0)

    def crash(job: Job) -> None:
        raise Crash

    holder = make_queue(crash, clock, debounce_seconds=0)
    rec = Recorder(clock)
    other = make_queue(rec, clock, debounce_seconds=0)
    holder.add(A, msgs("a", "b"))
    with pytest.raises(Crash):
        holder.run_due()  # A is leased; alice's scope is busy
    other.add(A2, msgs("c", "d"))
    other.add(B, msgs("e", "f"))
    assert other.run_due() == 1
    assert [j.key for j in rec.jobs] == [B]
    clock.advance(LEASE + 0.1)
    assert other.run_due() == 2
    assert {j.key for j in rec.jobs[1:]} == {A, A2}


def test_running_job_keeps_its_lease_by_renewal(make_queue: Maker) -> None:
    clock = FakeClock(1000.0)
    started, release = threading.Event(), threading.Event()

    def slow(job: Job) -> None:
        started.set()
        release.wait(WAIT)

    queue = make_queue(slow, clock, debounce_seconds=0, lease_seconds=0.3)
    queue.add(A, msgs("a", "b"))
    queue.start()
    try:
        assert started.wait(WAIT)
        other = make_queue(lambda job: None, clock, lease_seconds=0.3)
        for _ in range(3):  # each step passes most of the lease; the keeper renews it
            target = clock.advance(0.25) + 0.29
            renewed = threading.Event()
            for _ in range(int(WAIT / 0.02)):
                if lease_expiry(other, A) >= target:
                    renewed.set()
                    break
                renewed.wait(0.02)
            assert renewed.is_set()
            assert other.run_due() == 0
    finally:
        release.set()
    assert queue.flush(WAIT)


def lease_expiry(queue: SqlQueue, key: JobKey) -> float:
    with queue._transaction() as tx:
        row = tx.execute(
            "SELECT lease_expires_at FROM memfold_jobs WHERE key_hash = ?", (key_hash(key),)
        ).fetchone()
    return -1.0 if row is None or row[0] is None else float(row[0])


def test_unreadable_payload_is_dropped_naming_the_key_and_the_scope_goes_on(
    make_queue: Maker, caplog: pytest.LogCaptureFixture
) -> None:
    queue, rec, _ = setup(make_queue, debounce_seconds=0)
    queue.add(A, msgs("a", "b"))
    queue.add(A2, msgs("c", "d"))
    with queue._transaction() as tx:  # e.g. written by a newer memfold, or edited by hand
        tx.execute(
            "UPDATE memfold_jobs SET payload = ? WHERE key_hash = ?",
            ('{"messages": [{"role": "system", "content": "x"}]}', key_hash(A)),
        )
    with caplog.at_level(logging.ERROR, logger="memfold.queue"):
        assert queue.run_due() == 1
    assert [j.key for j in rec.jobs] == [A2]
    status = queue.status()
    assert (status.pending, status.in_flight, status.dropped) == (0, 0, 1)
    assert "thread 't1', user 'alice'" in caplog.text
    assert "unknown role 'system'" in caplog.text


# --- flush, close, restart, workers --------------------------------------------------


def test_flush_runs_everything_pending_now_in_the_calling_thread(make_queue: Maker) -> None:
    queue, rec, _ = setup(make_queue, debounce_seconds=60)
    queue.add(A, msgs("a", "b"))
    queue.add(B, msgs("c", "d"))
    assert queue.run_due() == 0
    assert queue.flush(WAIT)
    assert {j.key for j in rec.jobs} == {A, B}
    assert queue.status().pending == 0


def test_pending_rows_survive_close_and_run_in_the_next_queue(make_queue: Maker) -> None:
    clock = FakeClock(1000.0)
    first = make_queue(Recorder(clock), clock, debounce_seconds=60)
    first.add(A, msgs("a", "b"))
    first.add(B, msgs("c", "d"))
    assert not first.close(0)
    assert not first.add(A2, msgs("e", "f"))  # closed: refused
    rec = Recorder(clock)
    second = make_queue(rec, clock, debounce_seconds=60)
    assert second.status().pending == 2
    clock.advance(60)
    assert second.run_due() == 2
    assert {j.key for j in rec.jobs} == {A, B}


def test_workers_run_due_jobs_and_close_drains(make_queue: Maker) -> None:
    clock = FakeClock(1000.0)
    done = threading.Event()
    jobs: list[JobKey] = []

    def process(job: Job) -> None:
        jobs.append(job.key)
        if len(jobs) == 2:
            done.set()

    queue = make_queue(process, clock, debounce_seconds=0, workers=2)
    queue.start()
    queue.add(A, msgs("a", "b"))
    queue.add(B, msgs("c", "d"))
    assert done.wait(WAIT)
    assert queue.close(WAIT)
    assert sorted(jobs) == sorted([A, B])


def test_close_stops_workers_and_returns_false_when_the_database_fails(
    make_queue: Maker, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(1000.0)
    queue = make_queue(Recorder(clock), clock, debounce_seconds=60)
    queue.add(A, msgs("a", "b"))
    queue.start()

    def broken() -> Any:
        raise StorageError("database is gone")

    monkeypatch.setattr(queue, "_transaction", broken)
    with caplog.at_level(logging.WARNING, logger="memfold.queue"):
        assert not queue.close(WAIT)
    assert not any(thread.is_alive() for thread in queue._threads)
    assert "database is gone" in caplog.text


def test_newer_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / QUEUE_FILE
    SqliteQueue(path, lambda job: None, start=False).close(0)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM memfold_queue_schema").fetchall() == [(1,)]
        conn.execute("UPDATE memfold_queue_schema SET version = 99")
    conn.close()
    with pytest.raises(StorageError, match="upgrade memfold"):
        SqliteQueue(path, lambda job: None, start=False)


# --- factory and Memory --------------------------------------------------------------


def test_open_queue_builds_each_backend(tmp_path: Path) -> None:
    config = MemoryConfig(home=tmp_path, queue="memory")
    memory_queue = open_queue(config, lambda job: None, start=False)
    assert isinstance(memory_queue, InProcessQueue)
    sql = open_queue(config.model_copy(update={"queue": "sqlite"}), lambda job: None, start=False)
    assert isinstance(sql, SqliteQueue)
    assert isinstance(sql, UpdateQueue)
    assert sql.path == tmp_path / QUEUE_FILE
    assert lease_seconds_for(config) > config.extraction_timeout_seconds
    sql.close(0)
    with pytest.raises(ConfigError, match="cannot import"):
        open_queue(config.model_copy(update={"queue": "no_such_mod:Q"}), lambda job: None)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_memory_restart_processes_updates_left_pending_at_shutdown(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    dsn = request.getfixturevalue("postgres_dsn") if backend == "postgres" else None
    config = MemoryConfig(home=tmp_path, queue=backend, dsn=dsn, debounce_seconds=60)
    chat = [
        {"role": "user", "content": "I live in Lisbon."},
        {"role": "assistant", "content": "Nice."},
    ]
    first = Memory(config)
    assert first.record(chat, thread_id="t1", user_id="alice")
    assert not first.close(0)  # not drained: the update stays in the durable queue
    with Memory(config) as second:
        other = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"}]
        second.record(other, thread_id="t9", user_id="bob")  # opens the queue
        assert second.flush(WAIT)
        assert "t1" in second.get(user_id="alice").watermarks
        assert second.status().pending == 0


def test_a_key_whose_pending_turns_exceed_max_pending_bytes_is_refused(
    make_queue: Maker, caplog: pytest.LogCaptureFixture
) -> None:
    queue, rec, clock = setup(make_queue, max_pending_bytes=5_000)
    assert queue.add(A, msgs("x" * 2_000, "ok"))
    with caplog.at_level(logging.WARNING):
        assert not queue.add(A, (Message("user", "y" * 4_000), Message("assistant", "ok")))
        assert not queue.add(B, msgs("z" * 6_000, "ok"))
    assert queue.status().rejected == 2
    assert "max_pending_bytes=5000" in caplog.text
    clock.advance(60)
    assert queue.run_due() == 1
    assert texts(rec.jobs[0]) == ["x" * 2_000, "ok"]  # what was accepted is intact


def test_discard_takes_waiting_rows_and_records_that_arrived_while_a_job_ran(
    make_queue: Maker,
) -> None:
    """D2: a clear used to skip a leased row, so records that landed in it while its job
    ran survived the clear and were learned right after it."""
    clock = FakeClock(1000.0)
    seen: list[Job] = []
    dropped: list[Job] = []

    def process(job: Job) -> None:
        seen.append(job)
        if len(seen) == 1:  # while the first job runs: a record, then the scope is cleared
            assert queue.add(A, msgs("u", "v", "w", "x"))
            dropped.extend(queue.discard(Scope("alice")))

    queue = make_queue(process, clock, debounce_seconds=0)
    queue.add(A, msgs("u", "v"))
    clock.advance(0.5)  # A's row is due first, so it is the one running
    queue.add(A2, msgs("p", "q"))
    assert queue.run_due() >= 1
    assert sorted(texts(job) for job in dropped) == [["p", "q"], ["u", "v", "w", "x"]]
    queue.run_due()
    assert [texts(job) for job in seen[1:]] in ([], [[]])  # at most an empty no-op job
    assert queue.status().pending == 0
    assert queue.add(A, msgs("u", "v", "w", "x", "y", "z"))  # the thread goes on
    clock.advance(1)
    assert queue.run_due() == 1
    assert texts(seen[-1]) == ["u", "v", "w", "x", "y", "z"]
