"""The in-process update queue: per-key debounce with a bounded wait, and a worker pool.

Each key (thread, user, agent) has its own timer: an update runs ``debounce_seconds`` after
the key's last record, but never later than ``max_wait_seconds`` after its first pending
record, so steady traffic on one key delays neither that key forever nor any other key.
Workers never run two jobs for the same (user, agent) at once, so their commits do not
conflict; with a ``process_batch``, a worker takes every due job of the (user, agent)
together, so several busy threads of one user cost one extraction, not one each.
``add`` only touches memory under a short lock; ``process`` runs with no lock held.

Lock discipline: every field below ``_cond`` is guarded by it; ``process`` and logging of
outcomes happen after it is released.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memfold.model import Message, Scope, Signals
from memfold.queue._common import (
    DEFAULT_MAX_PENDING_BYTES,
    WARN_INTERVAL_SECONDS,
    QueueCore,
    RateLimitedWarning,
    log_failure,
    messages_bytes,
)
from memfold.queue.base import (
    MAX_RECORD_MARKS,
    NO_SIGNALS,
    Job,
    JobKey,
    QueueStatus,
    RecordMark,
    describe_key,
    earliest,
)
from memfold.queue.clock import Clock, SystemClock
from memfold.watermark import MergeIndex, merge_record, merge_record_indexed

__all__ = ["InProcessQueue"]

logger = logging.getLogger(__name__)

#: Idle workers re-check the schedule at least this often (guards against a clock that is
#: not the wall clock, e.g. a FakeClock moved without an add to wake anyone).
_MAX_IDLE_WAIT_SECONDS = 1.0


@dataclass(order=True, slots=True)
class _Entry:
    """A timer in the heap: when ``key``'s pending item with ``version`` becomes due."""

    due: float
    version: int
    key: JobKey = field(compare=False)


@dataclass(slots=True)
class _Pending:
    """A key's not-yet-started work; replaced in place by later records."""

    messages: tuple[Message, ...]
    signals: Signals
    first_added: float
    due: float = 0.0
    version: int = 0
    attempt: int = 1
    urgent: bool = False
    not_before: float = -math.inf  # a retry's backoff; a later record does not cut it short
    recorded_at: float | None = None  # the oldest record's, by the recorder's clock
    marks: tuple[RecordMark, ...] = ()
    size: int = 0  # UTF-8 bytes of ``messages``, counted in the queue's pending bytes
    index: MergeIndex | None = None  # of ``messages``, while records only append to them

    def remember(self, recorded_at: float | None) -> None:
        """Note a record just merged in (see ``Job.marks``)."""
        self.recorded_at = earliest(self.recorded_at, recorded_at)
        if recorded_at is not None and self.messages:
            mark = (recorded_at, len(self.messages) - 1, self.messages[-1])
            self.marks = (*self.marks[1 - MAX_RECORD_MARKS :], mark)

    def job(self, key: JobKey) -> Job:
        return Job(
            key,
            self.messages,
            self.signals,
            attempt=self.attempt,
            enqueued_at=self.first_added,
            urgent=self.urgent,
            recorded_at=self.recorded_at,
            marks=self.marks,
        )


class InProcessQueue(QueueCore):
    """A debounced, keyed queue running ``process(job)`` on a pool of worker threads.

    With ``start=False`` no thread is started: tests drive it with a ``FakeClock`` and
    :meth:`run_due`, and :meth:`flush` runs the jobs in the calling thread. ``process`` may
    return an object with a ``usage`` attribute (``prompt_tokens``/``completion_tokens``);
    the queue sums it into :meth:`status`. Any exception it raises is retried with
    exponential backoff, then the job is dropped with an error log naming the key.
    """

    def __init__(
        self,
        process: Callable[[Job], object],
        *,
        debounce_seconds: float = 30.0,
        max_wait_seconds: float = 120.0,
        workers: int = 4,
        max_pending: int = 10_000,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
        retry_attempts: int = 3,
        retry_backoff_seconds: float = 2.0,
        shutdown_timeout_seconds: float = 30.0,
        clock: Clock | None = None,
        start: bool = True,
        process_batch: Callable[[Sequence[Job]], object] | None = None,
    ) -> None:
        """``process_batch(jobs)``, when given, runs the due jobs of several threads of
        one (user, agent) together (one extraction for all of them); without it every
        job runs on its own through ``process``.

        Raises:
            ValueError: naming the first option out of range.
        """
        super().__init__(
            process,
            debounce_seconds=debounce_seconds,
            max_wait_seconds=max_wait_seconds,
            workers=workers,
            max_pending=max_pending,
            max_pending_bytes=max_pending_bytes,
            retry_attempts=retry_attempts,
            retry_backoff_seconds=retry_backoff_seconds,
            shutdown_timeout_seconds=shutdown_timeout_seconds,
            clock=clock if clock is not None else SystemClock(),
        )
        self._pending: dict[JobKey, _Pending] = {}
        self._by_scope: dict[Scope, set[JobKey]] = {}  # the pending keys of each scope
        self._process_batch = process_batch
        self._pending_bytes = 0  # sum of the pending items' sizes
        self._heap: list[_Entry] = []
        self._blocked: dict[Scope, list[_Entry]] = {}  # due, but their scope was busy
        self._in_flight: dict[JobKey, Job] = {}
        self._busy_scopes: set[Scope] = set()
        self._sequence = itertools.count(1)
        self._reject_warning = RateLimitedWarning(WARN_INTERVAL_SECONDS)
        self._closed_warning = RateLimitedWarning(WARN_INTERVAL_SECONDS)
        if start:
            self.start()

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker threads (once; a no-op when they run or the queue is closed)."""
        with self._cond:
            if self._threads or self._closed:
                return
            for index in range(self._worker_count):
                thread = threading.Thread(
                    target=self._work, name=f"memfold-queue-{index}", daemon=True
                )
                self._threads.append(thread)
            for thread in self._threads:
                thread.start()

    def close(self, timeout: float | None = None) -> bool:
        """Drain within ``timeout`` (default ``shutdown_timeout_seconds``), then stop the
        workers. Keys not processed by then are logged by name; their messages stay after
        the watermark, so the thread's next record sends them again. Idempotent: a second
        call returns the first one's result. Returns whether everything was processed."""
        with self._cond:
            if self._close_result is not None or self._closed:
                return bool(self._close_result)
            self._closed = True
        budget = self._shutdown_timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        drained = self.flush(budget)
        self._stop_workers(deadline, grace=0.0)
        with self._cond:
            left = [*self._in_flight, *self._pending]
            self._close_result = drained and not left
        if left:
            logger.warning(
                "memfold queue closed with %d update(s) not done within %.1fs; their "
                "messages will be sent again on the thread's next record: %s",
                len(left),
                budget,
                "; ".join(describe_key(key) for key in left),
            )
        return self._close_result

    # --- producer side ---------------------------------------------------------------

    def add(
        self,
        key: JobKey,
        messages: Sequence[Message],
        signals: Signals = NO_SIGNALS,
        *,
        urgent: bool = False,
        recorded_at: float | None = None,
    ) -> bool:
        """Enqueue a thread's latest messages; never blocks on work, never raises on load.

        A record for a key already pending is combined with it by
        :func:`~memfold.watermark.merge_record`: one that repeats the pending messages (the
        whole thread) replaces them, one that does not (only the newest turn) is merged in
        order, so no pending message is lost; signals are OR-merged. ``urgent`` makes the
        key due at once (messages about to be summarised away).
        Returns False when refused (counted in ``rejected`` and logged, rate-limited): a
        new key beyond ``max_pending``, pending turns beyond ``max_pending_bytes``, or the
        queue is closed.
        """
        batch = tuple(messages)
        with self._cond:
            now = self._clock.now()
            refused = self._admit_locked(
                key, batch, signals=signals, urgent=urgent, recorded_at=recorded_at, now=now
            )
            count = None
            if refused is not None:
                self._counters.rejected += 1
                warner = self._closed_warning if refused == "closed" else self._reject_warning
                count = warner.should_log(now)
        if refused is not None and count is not None:
            self._log_refused(logger, key, refused, count)
        return refused is None

    def _admit_locked(
        self,
        key: JobKey,
        batch: tuple[Message, ...],
        *,
        signals: Signals,
        urgent: bool,
        recorded_at: float | None,
        now: float,
    ) -> str | None:
        """Merge a record into the key's pending item and schedule it; or say why not
        (``closed``, ``full``: too many keys, ``bytes``: too many pending turns)."""
        if self._closed:
            return "closed"
        item = self._pending.get(key)
        if item is None and len(self._pending) >= self._max_pending:
            return "full"
        index, appended = None, False
        if item is None:
            merged = batch
        else:
            merged, index, appended = merge_record_indexed(item.messages, item.index, batch)
        size = item.size + messages_bytes(batch) if item and appended else messages_bytes(merged)
        before = 0 if item is None else item.size
        if self._pending_bytes - before + size > self._max_pending_bytes:
            return "bytes"
        self._pending_bytes += size - before
        if item is None:
            item = _Pending(merged, signals, first_added=now, urgent=urgent, size=size)
            self._put_locked(key, item)
        else:
            item.messages, item.size, item.index = merged, size, index
            item.signals = item.signals.merge(signals)
            item.urgent = urgent or item.urgent
            item.attempt = 1
        item.remember(recorded_at)
        if item.urgent or self._flushing:
            due = now
        else:
            due = min(now + self._debounce, item.first_added + self._max_wait)
            due = max(due, item.not_before)
        self._schedule_locked(key, item, due)
        return None

    def _put_locked(self, key: JobKey, item: _Pending) -> None:
        self._pending[key] = item
        self._by_scope.setdefault(Scope(key[1], key[2]), set()).add(key)

    def _pop_locked(self, key: JobKey) -> _Pending:
        item = self._pending.pop(key)
        self._pending_bytes -= item.size
        scope = Scope(key[1], key[2])
        keys = self._by_scope.get(scope)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_scope[scope]
        return item

    def _resize_locked(self, item: _Pending) -> None:
        size = messages_bytes(item.messages)
        self._pending_bytes += size - item.size
        item.size = size

    def _schedule_locked(self, key: JobKey, item: _Pending, due: float) -> None:
        item.due = due
        item.version = next(self._sequence)
        heapq.heappush(self._heap, _Entry(due, item.version, key))
        if len(self._heap) > 2 * len(self._pending) + 64:
            self._compact_locked()
        self._cond.notify()

    def _compact_locked(self) -> None:
        # Replaced items leave stale timers behind; rebuild so a hot key cannot grow the heap.
        self._heap = [_Entry(i.due, i.version, k) for k, i in self._pending.items()]
        heapq.heapify(self._heap)

    # --- consumer side ---------------------------------------------------------------

    def _take_locked(self, now: float) -> tuple[Job, ...]:
        """Pop the earliest due job whose scope is free, marking the scope busy, with the
        scope's other due jobs when a batch processor is set; () when none is due."""
        while self._heap and self._heap[0].due <= now:
            entry = heapq.heappop(self._heap)
            item = self._pending.get(entry.key)
            if item is None or item.version != entry.version:
                continue  # a stale timer: the item was replaced or already taken
            scope = Scope(entry.key[1], entry.key[2])
            if scope in self._busy_scopes:
                self._blocked.setdefault(scope, []).append(entry)
                continue
            keys = [entry.key]
            if self._process_batch is not None:
                keys += sorted(
                    (k for k in self._by_scope.get(scope, ()) if k != entry.key
                     and self._pending[k].due <= now),
                    key=lambda k: (self._pending[k].due, self._pending[k].version),
                )  # fmt: skip
            self._busy_scopes.add(scope)
            jobs = []
            for key in keys:
                job = self._pop_locked(key).job(key)
                self._in_flight[key] = job
                jobs.append(job)
            return tuple(jobs)
        return ()

    def _execute(self, jobs: Sequence[Job]) -> None:
        """Run one job, or one scope's batch, with no lock held; then record each job's
        outcome and free the scope."""
        error: Exception | None = None
        result: object = None
        try:
            if len(jobs) > 1 and self._process_batch is not None:
                result = self._process_batch(jobs)
            else:
                result = self._process(jobs[0])
        except Exception as exc:
            error = exc
        finally:
            with self._cond:
                outcomes = [
                    self._finish_locked(job, result if n == 0 else None, error)
                    for n, job in enumerate(jobs)
                ]
                self._busy_scopes.discard(jobs[0].scope)
                for entry in self._blocked.pop(jobs[0].scope, ()):
                    heapq.heappush(self._heap, entry)
                self._cond.notify_all()
        if error is not None:
            for job, (outcome, delay) in zip(jobs, outcomes, strict=True):
                self._log_failure(job, error, outcome, delay)

    def _finish_locked(
        self, job: Job, result: object, error: Exception | None
    ) -> tuple[str, float]:
        """Record the job's outcome; return it and the retry delay (the caller frees
        the scope). A batch's usage is in the first job's result only."""
        del self._in_flight[job.key]
        if error is None:
            self._counters.count_success(result)
            return "done", 0.0
        self._counters.count_failure(job, error)
        now = self._clock.now()
        delay = 0.0 if self._flushing else self._backoff * 2 ** (job.attempt - 1)
        newer = self._pending.get(job.key)
        if newer is not None:
            # A record arrived during the attempt: it takes over the retry, keeping what
            # the failed job held (merged like any record), signalled, and its age.
            newer.signals = newer.signals.merge(job.signals)
            newer.first_added = min(newer.first_added, job.enqueued_at)
            newer.not_before = max(newer.not_before, now + delay)
            newer.messages, newer.index = merge_record(job.messages, newer.messages), None
            self._resize_locked(newer)
            newer.urgent = newer.urgent or job.urgent
            newer.recorded_at = earliest(newer.recorded_at, job.recorded_at)
            newer.marks = (*job.marks, *newer.marks)[-MAX_RECORD_MARKS:]
            target = now if newer.urgent else min(newer.due, newer.first_added + self._max_wait)
            self._schedule_locked(job.key, newer, max(target, newer.not_before))
            return "superseded", delay
        # An error that says retrying cannot help (a rejected API key, an unknown model)
        # drops the job at once instead of burning the remaining attempts.
        if job.attempt >= self._retry_attempts or getattr(error, "retryable", True) is False:
            self._counters.dropped += 1
            return "dropped", 0.0
        retry = _Pending(
            job.messages,
            job.signals,
            first_added=job.enqueued_at,
            attempt=job.attempt + 1,
            urgent=job.urgent,
            not_before=now + delay,
            recorded_at=job.recorded_at,
            marks=job.marks,
        )
        self._put_locked(job.key, retry)
        self._resize_locked(retry)  # a retry of accepted work is never refused for size
        self._schedule_locked(job.key, retry, retry.not_before)
        self._counters.retried += 1
        return "retry", delay

    def _log_failure(self, job: Job, error: Exception, outcome: str, delay: float) -> None:
        note = "" if getattr(error, "retryable", True) else ", not retryable"
        log_failure(
            logger, job, error, outcome, delay, retry_attempts=self._retry_attempts, drop_note=note
        )

    def _work(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stop.is_set():
                        return
                    now = self._clock.now()
                    jobs = self._take_locked(now)
                    if jobs:
                        break
                    wait = _MAX_IDLE_WAIT_SECONDS
                    if self._heap:
                        wait = min(wait, max(0.0, self._heap[0].due - now))
                    self._cond.wait(wait)
            self._execute(jobs)

    def run_due(self, now: float | None = None) -> int:
        """Run, in the calling thread and one at a time, every job due at ``now`` (default:
        the clock's time), including jobs a finished one unblocked; return how many ran.

        This is the deterministic step for tests (``start=False`` and a ``FakeClock``).
        Retries are scheduled from the clock's time, so advance the clock, not ``now``.
        """
        ran = 0
        while True:
            with self._cond:
                jobs = self._take_locked(self._clock.now() if now is None else now)
            if not jobs:
                return ran
            self._execute(jobs)
            ran += len(jobs)

    def flush(self, timeout: float | None = None) -> bool:
        """Run everything pending now, due or not, and wait until nothing is pending or in
        flight, or ``timeout`` seconds (real time) passed. Without worker threads the jobs
        run in the calling thread. Retries during a flush skip their backoff. Returns
        whether the queue drained."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._flushing += 1
            now = self._clock.now()
            for item in self._pending.values():
                item.due = min(item.due, now)
            self._compact_locked()
            self._cond.notify_all()
        try:
            while True:
                with self._cond:
                    if not self._pending and not self._in_flight:
                        return True
                    remaining = math.inf if deadline is None else deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    jobs: tuple[Job, ...] = ()
                    if not self._workers_running():
                        jobs = self._take_locked(math.inf)
                    if not jobs:
                        self._cond.wait(min(remaining, _MAX_IDLE_WAIT_SECONDS))
                        continue
                self._execute(jobs)
        finally:
            with self._cond:
                self._flushing -= 1

    # --- introspection ---------------------------------------------------------------

    def status(self) -> QueueStatus:
        """Sizes and counters (O(pending keys) for the oldest age)."""
        with self._cond:
            now = self._clock.now()
            oldest = min((i.first_added for i in self._pending.values()), default=now)
            return self._counters.status(
                pending=len(self._pending),
                in_flight=len(self._in_flight),
                oldest_age=max(0.0, now - oldest),
                pending_bytes=self._pending_bytes,
            )

    def discard(self, scope: Scope) -> tuple[Job, ...]:
        """Remove the scope's pending updates (a running one is fenced by the updater)."""
        with self._cond:
            keys = list(self._by_scope.get(scope, ()))
            items = [(key, self._pop_locked(key)) for key in keys]
            self._cond.notify_all()  # a flush waiting for these may be done now
        return tuple(item.job(key) for key, item in items)

    def running_jobs(self, scope: Scope) -> tuple[Job, ...]:
        """The scope's jobs taken by a worker and not finished yet."""
        with self._cond:
            return tuple(job for job in self._in_flight.values() if job.scope == scope)

    def forget_user(self, user_id: str | None) -> int:
        """Drop the user's pending updates, every agent and thread (running ones are
        fenced by ``Memory``: see :meth:`running_jobs_of`); returns how many."""
        with self._cond:
            keys = [k for k in self._pending if k[1] == user_id]
            for key in keys:
                self._pop_locked(key)
            self._cond.notify_all()
        return len(keys)

    def running_jobs_of(self, user_id: str | None) -> tuple[Job, ...]:
        """The user's jobs (any agent) taken by a worker and not finished yet."""
        with self._cond:
            return tuple(job for job in self._in_flight.values() if job.user_id == user_id)

    def pending_keys(self) -> tuple[JobKey, ...]:
        """Keys waiting to run (not those in flight), earliest due first."""
        with self._cond:
            return tuple(sorted(self._pending, key=lambda k: self._pending[k].due))

    def in_flight_keys(self) -> tuple[JobKey, ...]:
        """Keys whose job is running now."""
        with self._cond:
            return tuple(self._in_flight)
