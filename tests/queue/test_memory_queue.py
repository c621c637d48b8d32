"""InProcessQueue: per-key debounce, bounded wait, scopes, urgent, retries, backpressure,
flush and close. Deterministic: a FakeClock and ``run_due`` (``start=False``), or real
worker threads synchronised with events and barriers, never with sleeps."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import pytest

from memfold.errors import ExtractionError
from memfold.model import Message, Signals
from memfold.queue.base import Job, JobKey, UpdateQueue, describe_key, job_key
from memfold.queue.clock import FakeClock
from memfold.queue.memory import InProcessQueue

WAIT = 10.0  # generous bound for real-thread synchronisation; only reached on failure


def msgs(*texts: str) -> tuple[Message, ...]:
    """Alternating user/assistant messages with ids equal to their text."""
    roles = ("user", "assistant")
    return tuple(Message(roles[i % 2], text, id=text) for i, text in enumerate(texts))


def texts(job: Job) -> list[str]:
    return [m.content for m in job.messages]


class Recorder:
    """A process callback that records every job it sees and the clock time it ran."""

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.jobs: list[Job] = []
        self.times: list[float] = []
        self.clock = clock
        self.lock = threading.Lock()

    def __call__(self, job: Job) -> object:
        with self.lock:
            self.jobs.append(job)
            self.times.append(self.clock.now() if self.clock else 0.0)
        return None

    def keys(self) -> list[JobKey]:
        return [j.key for j in self.jobs]


def make(
    process: object = None, clock: FakeClock | None = None, **options: object
) -> tuple[InProcessQueue, Recorder, FakeClock]:
    clock = clock or FakeClock()
    recorder = Recorder(clock)
    queue = InProcessQueue(
        process if process is not None else recorder,  # type: ignore[arg-type]
        clock=clock,
        start=False,
        **options,  # type: ignore[arg-type]
    )
    return queue, recorder, clock


A = job_key("t1", "alice")
A2 = job_key("t2", "alice")
B = job_key("t3", "bob")


# --- debounce and bounded wait --------------------------------------------------------


def test_job_runs_after_debounce_not_before() -> None:
    queue, rec, clock = make()
    assert queue.add(A, msgs("hi", "hello"))
    clock.advance(29.9)
    assert queue.run_due() == 0
    clock.advance(0.1)
    assert queue.run_due() == 1
    assert rec.keys() == [A]
    assert texts(rec.jobs[0]) == ["hi", "hello"]
    assert rec.jobs[0].attempt == 1
    assert rec.jobs[0].enqueued_at == 0.0


def test_same_key_add_replaces_pending_and_merges_signals() -> None:
    queue, rec, clock = make()
    queue.add(A, msgs("a", "b"), Signals(correction=True))
    clock.advance(10)
    queue.add(A, msgs("a", "b", "c", "d"), Signals(reinforcement=True))
    assert queue.status().pending == 1
    clock.advance(30)
    assert queue.run_due() == 1
    (job,) = rec.jobs
    assert texts(job) == ["a", "b", "c", "d"]
    assert job.signals == Signals(correction=True, reinforcement=True)
    assert job.enqueued_at == 0.0


def test_new_add_restarts_the_keys_debounce() -> None:
    queue, rec, clock = make()
    queue.add(A, msgs("a", "b"))
    clock.advance(20)
    queue.add(A, msgs("a", "b", "c", "d"))
    clock.advance(20)  # 40 s after the first add, 20 s after the last
    assert queue.run_due() == 0
    clock.advance(10)
    assert queue.run_due() == 1
    assert texts(rec.jobs[0]) == ["a", "b", "c", "d"]


def test_traffic_on_one_key_never_delays_another() -> None:
    queue, rec, clock = make()
    queue.add(B, msgs("quiet", "reply"))
    for step in range(1, 60):  # A records every 5 s for 5 minutes
        queue.add(A, msgs(*(f"m{i}" for i in range(step * 2))))
        clock.advance(5)
        queue.run_due()
    assert rec.keys().count(B) == 1
    assert rec.times[rec.keys().index(B)] == 30.0


def test_busy_key_still_processed_within_max_wait() -> None:
    queue, rec, clock = make()
    sent: list[float] = []
    for step in range(0, 100):  # a record every 5 s, never a 30 s pause
        queue.add(A, msgs(*(f"m{i}" for i in range(step + 2))))
        sent.append(clock.now())
        queue.run_due()
        clock.advance(5)
    assert len(rec.jobs) >= 3
    assert rec.times[0] == 120.0
    assert texts(rec.jobs[0])[-1] == "m25"  # the latest messages at t=120
    for job, ran_at in zip(rec.jobs, rec.times, strict=True):
        assert ran_at - job.enqueued_at <= 120.0


def test_max_wait_counts_from_first_pending_add_after_processing() -> None:
    queue, _, clock = make(debounce_seconds=30, max_wait_seconds=60)
    queue.add(A, msgs("a", "b"))
    clock.advance(30)
    queue.run_due()
    clock.advance(100)  # long after: the next window starts at the next add
    queue.add(A, msgs("a", "b", "c", "d"))
    clock.advance(29)
    assert queue.run_due() == 0
    clock.advance(1)
    assert queue.run_due() == 1


def test_zero_debounce_is_due_at_once() -> None:
    queue, _, _ = make(debounce_seconds=0)
    queue.add(A, msgs("a", "b"))
    assert queue.run_due() == 1


# --- scopes ---------------------------------------------------------------------------


def test_never_two_jobs_for_same_scope_at_once() -> None:
    inner: list[int] = []
    queue: InProcessQueue

    def process(job: Job) -> None:
        rec(job)
        if job.key == A:  # while A runs: A2 (same user) must wait, B (other user) may run
            inner.append(queue.run_due())
            inner.append(len(queue.pending_keys()))

    queue, rec, clock = make(process)
    queue.add(A, msgs("a", "b"))
    queue.add(A2, msgs("c", "d"))
    queue.add(B, msgs("e", "f"))
    clock.advance(30)
    assert queue.run_due() == 2  # A and A2; B ran in the inner step
    assert rec.keys() == [A, B, A2]
    assert inner == [1, 1]


def test_scope_includes_agent() -> None:
    seen: list[int] = []
    queue: InProcessQueue
    coder = job_key("t9", "alice", "coder")

    def process(job: Job) -> None:
        if job.key == A:
            seen.append(queue.run_due())

    queue, _, clock = make(process)
    queue.add(A, msgs("a", "b"))
    queue.add(coder, msgs("c", "d"))
    clock.advance(30)
    queue.run_due()
    assert seen == [1]


def test_jobs_of_other_scopes_run_in_parallel() -> None:
    barrier = threading.Barrier(2, timeout=WAIT)
    met: list[JobKey] = []

    def process(job: Job) -> None:
        barrier.wait()  # breaks (and the job fails) unless both jobs run at once
        met.append(job.key)

    clock = FakeClock()
    queue = InProcessQueue(process, clock=clock, workers=2, retry_attempts=1)
    try:
        queue.add(A, msgs("a", "b"), urgent=True)
        queue.add(B, msgs("c", "d"), urgent=True)
        assert queue.flush(WAIT)
    finally:
        queue.close(WAIT)
    assert sorted(met) == sorted([A, B])
    assert queue.status().failed == 0


def test_key_added_while_in_flight_runs_after_the_running_job() -> None:
    queue: InProcessQueue
    during: list[tuple[int, int]] = []

    def process(job: Job) -> None:
        rec(job)
        if len(rec.jobs) == 1:
            queue.add(A, msgs("a", "b", "c", "d"))
            during.append((queue.status().pending, queue.run_due(clock.now() + 1000)))

    queue, rec, clock = make(process)
    queue.add(A, msgs("a", "b"))
    clock.advance(30)
    assert queue.run_due() == 1
    assert during == [(1, 0)]  # pending, but not run while its own job was in flight
    status = queue.status()
    assert (status.pending, status.in_flight) == (1, 0)
    clock.advance(30)
    assert queue.run_due() == 1
    assert texts(rec.jobs[1]) == ["a", "b", "c", "d"]
    assert rec.jobs[1].enqueued_at == 30.0


# --- urgent ---------------------------------------------------------------------------


def test_urgent_runs_now_without_losing_newer_pending_messages() -> None:
    queue, rec, clock = make()
    queue.add(A, msgs("a", "b", "c", "d", "e", "f"))
    clock.advance(1)
    # the urgent record carries only the messages about to be summarised away
    assert queue.add(A, msgs("a", "b", "c", "d"), Signals(correction=True), urgent=True)
    assert queue.run_due() == 1
    (job,) = rec.jobs
    assert texts(job) == ["a", "b", "c", "d", "e", "f"]
    assert job.urgent
    assert job.signals.correction
    assert queue.status().pending == 0


def test_record_after_urgent_merges_instead_of_replacing() -> None:
    queue, rec, _ = make()
    queue.add(A, msgs("a", "b", "c", "d"), urgent=True)
    # after summarisation the thread kept only its tail, plus a new turn
    queue.add(A, (*msgs("c", "d"), *msgs("e", "f")))
    assert queue.run_due() == 1
    assert texts(rec.jobs[0]) == ["a", "b", "c", "d", "e", "f"]


def test_urgent_waits_for_in_flight_job_of_same_scope() -> None:
    queue: InProcessQueue
    during: list[int] = []

    def process(job: Job) -> None:
        rec(job)
        if len(rec.jobs) == 1:
            queue.add(A, msgs("a", "b", "c", "d"), urgent=True)
            during.append(queue.run_due())

    queue, rec, clock = make(process)
    queue.add(A, msgs("a", "b"))
    clock.advance(30)
    assert queue.run_due() == 2
    assert during == [0]
    assert texts(rec.jobs[1]) == ["a", "b", "c", "d"]


# --- failures -------------------------------------------------------------------------


def test_error_marked_not_retryable_is_dropped_at_once(caplog: pytest.LogCaptureFixture) -> None:
    from memfold.llm.base import ChatModelError

    calls: list[int] = []

    def process(job: Job) -> None:
        calls.append(job.attempt)
        raise ChatModelError("401 invalid API key", status=401, retryable=False)

    queue, _, clock = make(process, retry_attempts=3, retry_backoff_seconds=2)
    queue.add(A, msgs("a", "b"), urgent=True)
    with caplog.at_level(logging.ERROR, logger="memfold.queue.memory"):
        assert queue.run_due() == 1
        clock.advance(100)
        assert queue.run_due() == 0
    assert calls == [1]
    status = queue.status()
    assert (status.failed, status.retried, status.dropped) == (1, 0, 1)
    assert "not retryable" in caplog.text


def test_failed_job_retried_with_backoff_then_dropped(caplog: pytest.LogCaptureFixture) -> None:
    attempts: list[tuple[int, float]] = []

    def process(job: Job) -> None:
        attempts.append((job.attempt, clock.now()))
        raise ExtractionError("reply was not JSON")

    queue, _, clock = make(process, retry_attempts=3, retry_backoff_seconds=2)
    queue.add(A, msgs("a", "b"), urgent=True)
    with caplog.at_level(logging.WARNING, logger="memfold.queue.memory"):
        assert queue.run_due() == 1
        clock.advance(1.9)
        assert queue.run_due() == 0
        clock.advance(0.1)
        assert queue.run_due() == 1
        clock.advance(3.9)
        assert queue.run_due() == 0
        clock.advance(0.1)
        assert queue.run_due() == 1
        clock.advance(1000)
        assert queue.run_due() == 0
    assert attempts == [(1, 0.0), (2, 2.0), (3, 6.0)]
    status = queue.status()
    assert (status.failed, status.retried, status.dropped, status.pending) == (3, 2, 1, 0)
    assert status.last_error is not None
    assert "ExtractionError" in status.last_error
    assert "reply was not JSON" in status.last_error
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert describe_key(A) in errors[0].getMessage()
    assert errors[0].exc_info is not None


@pytest.mark.parametrize("error", [TimeoutError("slow"), RuntimeError("boom"), ValueError("x")])
def test_any_exception_is_retried(error: Exception) -> None:
    calls: list[int] = []

    def process(job: Job) -> None:
        calls.append(job.attempt)
        if job.attempt == 1:
            raise error

    queue, _, clock = make(process, retry_backoff_seconds=1)
    queue.add(A, msgs("a", "b"), urgent=True)
    queue.run_due()
    clock.advance(1)
    queue.run_due()
    assert calls == [1, 2]
    status = queue.status()
    assert (status.processed, status.failed, status.dropped) == (1, 1, 0)


def test_newer_record_during_failed_attempt_wins_over_retry() -> None:
    queue: InProcessQueue
    seen: list[Job] = []

    def process(job: Job) -> None:
        seen.append(job)
        if len(seen) == 1:
            clock.advance(5)
            queue.add(A, msgs("a", "b", "c", "d"), Signals(reinforcement=True))
            raise ExtractionError("bad reply")

    queue, _, clock = make(process, retry_backoff_seconds=2)
    queue.add(A, msgs("a", "b"), Signals(correction=True))
    clock.advance(30)
    assert queue.run_due() == 1
    status = queue.status()
    assert (status.failed, status.retried, status.pending) == (1, 0, 1)
    clock.advance(29)  # the newer record's debounce runs from its add (t=35)
    assert queue.run_due() == 0
    clock.advance(1)
    assert queue.run_due() == 1
    assert len(seen) == 2
    assert texts(seen[1]) == ["a", "b", "c", "d"]
    assert seen[1].attempt == 1
    assert seen[1].signals == Signals(correction=True, reinforcement=True)
    assert seen[1].enqueued_at == 0.0


def test_record_during_backoff_does_not_cut_the_backoff_short() -> None:
    calls: list[float] = []

    def process(job: Job) -> None:
        calls.append(clock.now())
        if len(calls) == 1:
            raise ExtractionError("bad")

    queue, _, clock = make(process, debounce_seconds=0, retry_backoff_seconds=10)
    queue.add(A, msgs("a", "b"))
    queue.run_due()
    queue.add(A, msgs("a", "b", "c", "d"))
    assert queue.run_due() == 0
    clock.advance(10)
    assert queue.run_due() == 1
    assert calls == [0.0, 10.0]


def test_process_result_usage_is_summed_into_status() -> None:
    @dataclass
    class Usage:
        prompt_tokens: int
        completion_tokens: int

    @dataclass
    class Result:
        usage: Usage

    queue, _, _ = make(lambda job: Result(Usage(100, 7)), debounce_seconds=0)
    queue.add(A, msgs("a", "b"))
    queue.add(B, msgs("c", "d"))
    queue.run_due()
    status = queue.status()
    assert (status.prompt_tokens, status.completion_tokens, status.processed) == (200, 14, 2)


# --- backpressure ---------------------------------------------------------------------


def test_backpressure_rejects_new_keys_admits_replacements(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue, rec, clock = make(max_pending=2)
    with caplog.at_level(logging.WARNING, logger="memfold.queue.memory"):
        assert queue.add(A, msgs("a", "b"))
        assert queue.add(B, msgs("c", "d"))
        assert not queue.add(A2, msgs("e", "f"))
        assert not queue.add(job_key("t4"), msgs("g", "h"))
        assert queue.add(A, msgs("a", "b", "x", "y"))  # replacement: always admitted
    warnings = [r for r in caplog.records if "full" in r.getMessage()]
    assert len(warnings) == 1  # rate-limited
    assert queue.status().rejected == 2
    assert set(queue.pending_keys()) == {A, B}
    clock.advance(30)
    queue.run_due()
    assert queue.add(A2, msgs("e", "f"))
    assert texts(rec.jobs[-1]) == ["a", "b", "x", "y"]


def test_backpressure_warning_repeats_after_interval_with_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue, _, clock = make(max_pending=1)
    queue.add(A, msgs("a", "b"))
    with caplog.at_level(logging.WARNING, logger="memfold.queue.memory"):
        for _ in range(3):
            queue.add(B, msgs("c", "d"))
        clock.advance(60)
        queue.add(B, msgs("c", "d"))
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "(1 refused" in messages[0]
    assert "(3 refused" in messages[1]


# --- flush and close ------------------------------------------------------------------


def test_flush_runs_everything_pending_now() -> None:
    queue, rec, _ = make()
    queue.add(A, msgs("a", "b"))
    queue.add(A2, msgs("c", "d"))
    queue.add(B, msgs("e", "f"))
    assert queue.flush()
    assert sorted(rec.keys()) == sorted([A, A2, B])
    assert rec.times == [0.0, 0.0, 0.0]
    status = queue.status()
    assert (status.pending, status.in_flight, status.processed) == (0, 0, 3)


def test_flush_on_empty_queue_returns_true() -> None:
    queue, rec, _ = make()
    assert queue.flush(0)
    assert rec.jobs == []


def test_flush_retries_without_backoff_until_drained() -> None:
    def process(job: Job) -> None:
        if job.attempt < 3:
            raise ExtractionError("flaky")

    queue, _, _ = make(process, retry_backoff_seconds=60)
    queue.add(A, msgs("a", "b"))
    assert queue.flush(WAIT)
    status = queue.status()
    assert (status.processed, status.failed, status.dropped) == (1, 2, 0)


def test_flush_with_worker_threads_does_not_need_the_clock_to_move() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    queue = InProcessQueue(rec, clock=clock, workers=2)
    try:
        for i in range(10):
            queue.add(job_key(f"t{i}", f"u{i % 3}"), msgs("a", f"b{i}"))
        assert queue.flush(WAIT)
        assert len(rec.jobs) == 10
    finally:
        assert queue.close(WAIT)


def test_flush_times_out_while_a_job_is_stuck() -> None:
    started, release = threading.Event(), threading.Event()

    def process(job: Job) -> None:
        started.set()
        release.wait(WAIT)

    queue = InProcessQueue(process, clock=FakeClock(), workers=1)
    try:
        queue.add(A, msgs("a", "b"), urgent=True)
        assert started.wait(WAIT)
        assert not queue.flush(0.05)
        release.set()
        assert queue.flush(WAIT)
    finally:
        release.set()
        queue.close(WAIT)


def test_close_logs_keys_still_pending_at_deadline(caplog: pytest.LogCaptureFixture) -> None:
    queue, rec, _ = make()
    queue.add(A, msgs("a", "b"))
    queue.add(B, msgs("c", "d"))
    with caplog.at_level(logging.WARNING, logger="memfold.queue.memory"):
        assert not queue.close(timeout=0)
    assert rec.jobs == []
    (record,) = caplog.records
    assert describe_key(A) in record.getMessage()
    assert describe_key(B) in record.getMessage()


def test_close_logs_in_flight_key_when_job_outlives_budget(
    caplog: pytest.LogCaptureFixture,
) -> None:
    started, release = threading.Event(), threading.Event()

    def process(job: Job) -> None:
        started.set()
        release.wait(WAIT)

    queue = InProcessQueue(process, clock=FakeClock(), workers=1)
    queue.add(A, msgs("a", "b"), urgent=True)
    assert started.wait(WAIT)
    try:
        with caplog.at_level(logging.WARNING, logger="memfold.queue.memory"):
            assert not queue.close(timeout=0.05)
    finally:
        release.set()
    assert describe_key(A) in caplog.records[0].getMessage()


def test_close_drains_then_stops_workers() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    queue = InProcessQueue(rec, clock=clock, workers=3)
    names = {f"memfold-queue-{i}" for i in range(3)}
    assert names <= {t.name for t in threading.enumerate()}
    queue.add(A, msgs("a", "b"))
    queue.add(B, msgs("c", "d"))
    assert queue.close(WAIT)
    assert sorted(rec.keys()) == sorted([A, B])
    alive = [t for t in threading.enumerate() if t.name in names and t.is_alive()]
    assert alive == []


def test_close_is_idempotent_and_add_after_close_is_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue, rec, _ = make()
    queue.add(A, msgs("a", "b"))
    assert queue.close()
    with caplog.at_level(logging.WARNING, logger="memfold.queue.memory"):
        assert queue.close()
        assert not queue.add(B, msgs("c", "d"))
    assert len(rec.jobs) == 1
    assert queue.status().rejected == 1
    (record,) = caplog.records
    assert "closed" in record.getMessage()


def test_context_manager_drains_on_exit() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    with InProcessQueue(rec, clock=clock, workers=2) as queue:
        queue.add(A, msgs("a", "b"))
    assert rec.keys() == [A]


# --- status, validation, protocol -----------------------------------------------------


def test_status_reports_oldest_pending_age_and_in_flight() -> None:
    queue: InProcessQueue
    during: list[tuple[int, int]] = []

    def process(job: Job) -> None:
        status = queue.status()
        during.append((status.in_flight, status.pending))

    queue, _, clock = make(process)
    queue.add(A, msgs("a", "b"))
    clock.advance(10)
    queue.add(B, msgs("c", "d"))
    assert queue.status().oldest_pending_age_seconds == 10.0
    clock.advance(30)
    queue.run_due()
    assert during == [(1, 1), (1, 0)]
    assert queue.status().oldest_pending_age_seconds == 0.0


def test_replacing_a_hot_key_keeps_the_timer_heap_bounded() -> None:
    queue, rec, clock = make()
    for i in range(5000):  # each exchange recorded on its own: merged in, in linear time
        queue.add(A, msgs(f"q{i}", f"r{i}"))
    assert len(queue._heap) <= 2 * 1 + 64 + 1  # private: the bound under test
    clock.advance(30)
    assert queue.run_due() == 1
    assert texts(rec.jobs[0]) == [t for i in range(5000) for t in (f"q{i}", f"r{i}")]


def test_a_record_repeating_the_thread_replaces_the_pending_messages() -> None:
    queue, rec, clock = make()
    queue.add(A, msgs("a", "b"))
    queue.add(A, msgs("a", "b", "c", "d"))
    queue.add(A, msgs("a", "b", "c", "d", "e", "f"))
    clock.advance(30)
    assert queue.run_due() == 1
    assert texts(rec.jobs[0]) == ["a", "b", "c", "d", "e", "f"]


def test_records_of_only_the_newest_turn_are_merged_not_replaced() -> None:
    """D5: a caller passing each exchange on its own used to keep only the last one."""
    queue, rec, clock = make()
    for k in range(10):
        queue.add(A, (Message("user", f"fact {k}"), Message("assistant", "ok")))
    clock.advance(30)
    assert queue.run_due() == 1
    assert [m.content for m in rec.jobs[0].messages] == [
        text for k in range(10) for text in (f"fact {k}", "ok")
    ]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("workers", 0),
        ("debounce_seconds", -1),
        ("max_wait_seconds", float("nan")),
        ("max_pending", 0),
        ("retry_attempts", 0),
        ("retry_backoff_seconds", -0.5),
        ("shutdown_timeout_seconds", -1),
    ],
)
def test_invalid_options_are_rejected_by_name(option: str, value: float) -> None:
    with pytest.raises(ValueError, match=option):
        InProcessQueue(lambda job: None, start=False, **{option: value})  # type: ignore[arg-type]


def test_job_exposes_its_key_parts_and_scope() -> None:
    job = Job(job_key("t1", "alice", "coder"), msgs("a", "b"))
    assert (job.thread_id, job.user_id, job.agent) == ("t1", "alice", "coder")
    assert (job.scope.user_id, job.scope.agent) == ("alice", "coder")


def test_in_process_queue_satisfies_update_queue_protocol() -> None:
    queue, _, _ = make()
    assert isinstance(queue, UpdateQueue)


def test_fake_clock_refuses_to_go_back() -> None:
    clock = FakeClock(5)
    assert clock.advance(1.5) == 6.5
    with pytest.raises(ValueError, match="cannot go back"):
        clock.advance(-1)


def test_close_from_inside_a_job_does_not_deadlock() -> None:
    results: list[bool] = []
    done = threading.Event()
    queue: InProcessQueue

    def process(job: Job) -> None:
        results.append(queue.close(timeout=0))
        done.set()

    queue = InProcessQueue(process, clock=FakeClock(), workers=2)
    queue.add(A, msgs("a", "b"), urgent=True)
    assert done.wait(WAIT)
    assert results == [False]  # its own job was still in flight
    assert not queue.add(B, msgs("c", "d"))


def test_pending_turns_beyond_max_pending_bytes_are_refused_counted_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Item 13: max_pending bounded keys only; 500 pending 1 MB threads took 475 MB."""
    queue, _, clock = make(max_pending_bytes=10_000)
    big = (Message("user", "x" * 4_000), Message("assistant", "ok"))
    assert queue.add(A, big)
    assert queue.add(B, big)
    assert queue.status().pending_bytes == 2 * 4_002
    with caplog.at_level(logging.WARNING):
        assert not queue.add(A2, big)  # a third would pass 10,000 bytes
        grown = (*big, Message("user", "é" * 1_000), Message("assistant", "ok"))  # 2,002 B
        assert not queue.add(A, grown)  # a grown thread, too
    assert queue.status().pending_bytes == 2 * 4_002
    status = queue.status()
    assert status.rejected == 2
    assert "max_pending_bytes=10000" in caplog.text
    assert "raise max_pending_bytes" in caplog.text
    clock.advance(30)
    assert queue.run_due() == 2
    assert queue.status().pending_bytes == 0
    assert queue.add(A2, big)  # room again once the pending ones ran


def test_a_retry_during_flush_logs_that_it_retries_at_once_not_in_zero_seconds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Newcomer finding 18: retries during close() logged 'retrying in 0.0s'."""
    calls: list[Job] = []

    def failing_once(job: Job) -> None:
        calls.append(job)
        if len(calls) == 1:
            raise ExtractionError("the model replied nonsense")

    queue, _, _ = make(failing_once, retry_attempts=2)
    queue.add(A, msgs("hi", "hello"))
    with caplog.at_level(logging.WARNING):
        assert queue.flush(5)
    assert "retrying at once" in caplog.text
    assert "retrying in 0.0s" not in caplog.text
