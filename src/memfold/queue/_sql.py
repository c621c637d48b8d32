"""Shared mechanics of the durable queues (``queue: sqlite`` and ``queue: postgres``).

One row per key in ``memfold_jobs`` holds the key's latest payload. ``add`` upserts it:
the payload is replaced (an urgent record merges messages), signals are OR-merged, the
due time is reset to ``min(now + debounce, first_added_at + max_wait)`` and ``version``
is bumped. Every replica runs the same workers: a worker *claims* a due row by writing a
lease (owner token + expiry), runs the job with no transaction open, then deletes the row
only if its version is unchanged; otherwise the newer version stays queued. A failure
bumps ``attempts`` and backs off; after ``retry_attempts`` the row is dropped. A lease
that expires (its process died) makes the row claimable again, so a job runs at least
once; a claim skips rows whose (user, agent) has another live lease, so two jobs of one
scope never run at once, across every replica.

Lease policy: ``lease_seconds`` (default: the extraction timeout plus a margin) and a
keeper thread renews the leases of this process's running jobs every third of that, so a
slow job keeps its lease and a crashed process loses it within ``lease_seconds``.

Time is the injected clock's, wall-clock seconds by default, because replicas compare
each other's due times and leases. Dialects supply connections, transactions, row locks
and wake-ups; everything else is here.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from memfold.errors import StorageError
from memfold.model import Message, Signals
from memfold.queue._payload import Payload, decode_payload, encode_payload, key_hash, scope_hash
from memfold.queue.base import NO_SIGNALS, Job, JobKey, QueueStatus, describe_key
from memfold.queue.clock import Clock
from memfold.queue.memory import _RateLimitedWarning
from memfold.watermark import merge_messages

__all__ = ["SCHEMA_VERSION", "SqlQueue", "WallClock"]

logger = logging.getLogger("memfold.queue")

#: Version of the ``memfold_jobs`` layout, recorded in ``memfold_queue_schema``.
SCHEMA_VERSION = 1
_WARN_INTERVAL_SECONDS = 60.0
_MAX_ERROR_CHARS = 300
_INSERT_RETRIES = 5
_STOP_GRACE_SECONDS = 0.5

_COLUMNS = "key_hash, thread_id, user_id, agent, payload, version, first_added_at, attempts"


class WallClock:
    """``time.time``: the one clock several processes (and machines) agree on."""

    def now(self) -> float:
        return time.time()


class Cursor(Protocol):
    """The DB-API subset both drivers provide."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...


class Tx(Protocol):
    """An open transaction; SQL uses ``?`` placeholders (dialects translate)."""

    def execute(self, sql: str, params: Sequence[object] = ()) -> Cursor: ...


@dataclass(frozen=True, slots=True)
class _Claim:
    job: Job
    key_hash: str
    version: int
    owner: str


def _check(name: str, value: float, low: float) -> None:
    if not value >= low:  # also rejects NaN
        raise ValueError(f"{name}={value!r}: must be at least {low}")


class SqlQueue:
    """The durable debounced queue over a SQL table; subclasses supply the dialect.

    ``start=False`` starts no thread: tests drive it with a clock and :meth:`run_due`.
    """

    #: Idle workers re-check the table at least this often.
    poll_seconds = 0.2
    #: Appended to a SELECT that the transaction will update (row lock where supported).
    for_update = ""
    #: Appended to the claim SELECT.
    skip_locked = ""

    def __init__(
        self,
        process: Callable[[Job], object],
        *,
        debounce_seconds: float = 30.0,
        max_wait_seconds: float = 120.0,
        workers: int = 4,
        max_pending: int = 10_000,
        retry_attempts: int = 3,
        retry_backoff_seconds: float = 2.0,
        shutdown_timeout_seconds: float = 30.0,
        lease_seconds: float = 150.0,
        clock: Clock | None = None,
    ) -> None:
        _check("debounce_seconds", debounce_seconds, 0)
        _check("max_wait_seconds", max_wait_seconds, 0)
        _check("workers", workers, 1)
        _check("max_pending", max_pending, 1)
        _check("retry_attempts", retry_attempts, 1)
        _check("retry_backoff_seconds", retry_backoff_seconds, 0)
        _check("shutdown_timeout_seconds", shutdown_timeout_seconds, 0)
        _check("lease_seconds", lease_seconds, 0.1)
        self._process = process
        self._debounce = float(debounce_seconds)
        self._max_wait = float(max_wait_seconds)
        self._worker_count = workers
        self._max_pending = max_pending
        self._retry_attempts = retry_attempts
        self._backoff = float(retry_backoff_seconds)
        self._shutdown_timeout = float(shutdown_timeout_seconds)
        self._lease = float(lease_seconds)
        self._clock: Clock = clock if clock is not None else WallClock()
        self._instance = uuid.uuid4().hex[:12]

        self._cond = threading.Condition(threading.Lock())
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._running: dict[str, _Claim] = {}  # key hash → this process's running claim
        self._flushing = 0
        self._closed = False
        self._close_result: bool | None = None
        self._reject_warning = _RateLimitedWarning(_WARN_INTERVAL_SECONDS)
        self._error_warning = _RateLimitedWarning(_WARN_INTERVAL_SECONDS)
        self._processed = 0
        self._failed = 0
        self._dropped = 0
        self._rejected = 0
        self._retried = 0
        self._last_error: str | None = None
        self._prompt_tokens = 0
        self._completion_tokens = 0

    # --- dialect hooks ----------------------------------------------------------------

    def _transaction(self) -> contextlib.AbstractContextManager[Tx]:
        """A write transaction (committed on success, rolled back on error)."""
        raise NotImplementedError

    def _claim_lock(self, tx: Tx) -> None:
        """Serialise claims when the dialect's transactions do not already do it."""

    def _notify(self, tx: Tx) -> None:
        """Wake other replicas' workers (on commit)."""

    def _fast_commit(self, tx: Tx) -> None:
        """Let this transaction commit without waiting for the disk where the dialect can.

        Used for claims, completions and lease renewals only: losing one in a server crash
        at worst runs a job again (the queue is at-least-once); records stay durable."""

    def _start_listener(self) -> None:
        """Start whatever wakes this replica's workers on other replicas' notifications."""

    def _close_connections(self) -> None:
        """Release every connection no running thread still uses."""

    def _release_thread_connection(self) -> None:
        """Release the calling worker thread's connection as it exits."""

    # --- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers and the lease keeper (once; no-op when running or closed)."""
        with self._cond:
            if self._threads or self._closed:
                return
            for index in range(self._worker_count):
                self._threads.append(
                    threading.Thread(target=self._work, name=f"memfold-sql-queue-{index}")
                )
            self._threads.append(threading.Thread(target=self._keep_leases, name="memfold-lease"))
            for thread in self._threads:
                thread.daemon = True
                thread.start()
        self._start_listener()

    def close(self, timeout: float | None = None) -> bool:
        """Drain within ``timeout`` (default ``shutdown_timeout_seconds``), stop the
        workers, release connections. Rows not processed stay in the table (that is the
        durability): the next queue on the same database runs them. Idempotent. Returns
        whether everything was processed."""
        with self._cond:
            if self._closed:
                return bool(self._close_result)
            self._closed = True
        budget = self._shutdown_timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        drained = self.flush(budget) if budget > 0 else self._is_empty()
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        for thread in self._threads:
            if thread is not threading.current_thread():
                # a short grace even at timeout 0: idle workers leave within one claim
                thread.join(max(_STOP_GRACE_SECONDS, deadline - time.monotonic()))
        try:
            left = self._pending_keys()
        except Exception:
            logger.warning("memfold queue: could not list pending keys at close", exc_info=True)
            left = []
        with self._cond:
            self._close_result = drained and not left
        if left:
            logger.warning(
                "memfold queue closed with %d update(s) still queued; they stay in the "
                "durable queue and run when a replica next runs: %s",
                len(left),
                "; ".join(describe_key(key) for key in left[:20]),
            )
        self._close_connections()
        return bool(self._close_result)

    def __enter__(self) -> SqlQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- producer side ----------------------------------------------------------------

    def add(
        self,
        key: JobKey,
        messages: Sequence[Message],
        signals: Signals = NO_SIGNALS,
        *,
        urgent: bool = False,
    ) -> bool:
        """Upsert the key's row (see the module docstring); never raises. Returns False when
        refused: a new key beyond ``max_pending``, the queue is closed, or the database
        failed (logged)."""
        batch = Payload(tuple(messages), signals, urgent)
        with self._cond:
            closed = self._closed
            flushing = self._flushing > 0
        if closed:
            self._refuse(key, "closed")
            return False
        try:
            admitted = self._upsert(key, batch, flushing)
        except Exception as exc:
            self._refuse(key, "error", exc)
            return False
        if not admitted:
            self._refuse(key, "full")
            return False
        with self._cond:
            self._cond.notify()
        return True

    def _upsert(self, key: JobKey, batch: Payload, flushing: bool) -> bool:
        khash = key_hash(key)
        for _ in range(_INSERT_RETRIES):
            with self._transaction() as tx:
                now = self._clock.now()
                row = tx.execute(
                    "SELECT payload, first_added_at, due_at, attempts, lease_expires_at "  # noqa: S608 - only module constants are interpolated
                    f"FROM memfold_jobs WHERE key_hash = ?{self.for_update}",
                    (khash,),
                ).fetchone()
                if row is None:
                    count = tx.execute(
                        "SELECT COUNT(*) FROM memfold_jobs "
                        "WHERE lease_expires_at IS NULL OR lease_expires_at < ?",
                        (now,),
                    ).fetchone()[0]
                    if count >= self._max_pending:
                        return False
                    due = (
                        now
                        if batch.urgent or flushing
                        else now + min(self._debounce, self._max_wait)
                    )
                    inserted = tx.execute(
                        "INSERT INTO memfold_jobs (key_hash, scope_hash, thread_id, user_id, "
                        "agent, payload, version, first_added_at, due_at, attempts) "
                        "VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, 0) ON CONFLICT (key_hash) DO NOTHING",
                        (khash, scope_hash(key), *key, encode_payload(batch), now, due),
                    ).rowcount
                    if inserted != 1:
                        continue  # another replica inserted the key first: update it instead
                else:
                    old_payload, first_added, old_due, attempts, lease_expires = row
                    payload, first_added, due = self._merge(
                        decode_payload(old_payload),
                        batch,
                        now=now,
                        first_added=float(first_added),
                        old_due=float(old_due),
                        retrying=int(attempts) > 0,
                        in_flight=lease_expires is not None and float(lease_expires) >= now,
                        flushing=flushing,
                    )
                    tx.execute(
                        "UPDATE memfold_jobs SET payload = ?, version = version + 1, "
                        "first_added_at = ?, due_at = ?, attempts = 0 WHERE key_hash = ?",
                        (encode_payload(payload), first_added, due, khash),
                    )
                if due <= now:
                    self._notify(tx)
                return True
        raise StorageError(f"memfold queue: could not upsert {describe_key(key)}; retry")

    def _merge(
        self,
        old: Payload,
        batch: Payload,
        *,
        now: float,
        first_added: float,
        old_due: float,
        retrying: bool,
        in_flight: bool,
        flushing: bool,
    ) -> tuple[Payload, float, float]:
        """The row's new payload, first-added time and due time after one more record."""
        if in_flight:
            # The running job already has the old payload: a new quiet period starts, as
            # if the row had been taken out of the queue (a failure merges back what it had).
            payload, first_added = batch, now
        else:
            merge = batch.urgent or old.urgent
            messages = merge_messages(old.messages, batch.messages) if merge else batch.messages
            payload = Payload(messages, old.signals.merge(batch.signals), merge)
        if payload.urgent or flushing:
            return payload, first_added, now
        due = min(now + self._debounce, first_added + self._max_wait)
        if retrying and not in_flight:
            due = max(due, old_due)  # a later record does not cut a retry's backoff short
        return payload, first_added, due

    def _refuse(self, key: JobKey, reason: str, error: Exception | None = None) -> None:
        with self._cond:
            self._rejected += 1
            warner = self._error_warning if reason == "error" else self._reject_warning
            count = warner.should_log(time.monotonic())
        if count is None:
            return
        where = describe_key(key)
        if reason == "closed":
            logger.warning(
                "memfold queue is closed: update for %s not queued (%d refused since the "
                "last warning); record before closing Memory",
                where,
                count,
            )
        elif reason == "full":
            logger.warning(
                "memfold queue is full (%d pending keys): update for %s not queued (%d "
                "refused since the last warning); raise max_pending or add workers",
                self._max_pending,
                where,
                count,
            )
        else:
            logger.error(
                "memfold queue database failed: update for %s not queued (%d refused since "
                "the last error); check the database",
                where,
                count,
                exc_info=error,
            )

    # --- consumer side ----------------------------------------------------------------

    def _claim(self, now: float) -> tuple[_Claim | None, float | None]:
        """Lease the earliest due row whose scope is free; else the next due time."""
        owner = f"{self._instance}-{uuid.uuid4().hex[:12]}"
        with self._transaction() as tx:
            self._fast_commit(tx)
            self._claim_lock(tx)
            row = tx.execute(
                f"SELECT {_COLUMNS} FROM memfold_jobs AS j WHERE j.due_at <= ? "  # noqa: S608 - only module constants are interpolated
                "AND (j.lease_expires_at IS NULL OR j.lease_expires_at < ?) "
                "AND NOT EXISTS (SELECT 1 FROM memfold_jobs AS o WHERE o.scope_hash = "
                "j.scope_hash AND o.key_hash <> j.key_hash AND o.lease_expires_at >= ?) "
                f"ORDER BY j.due_at LIMIT 1{self.skip_locked}",
                (now, now, now),
            ).fetchone()
            if row is None:
                nxt = tx.execute(
                    "SELECT MIN(due_at) FROM memfold_jobs "
                    "WHERE lease_expires_at IS NULL OR lease_expires_at < ?",
                    (now,),
                ).fetchone()[0]
                return None, None if nxt is None else float(nxt)
            khash, thread_id, user_id, agent, raw, version, first_added, attempts = row
            tx.execute(
                "UPDATE memfold_jobs SET lease_owner = ?, lease_expires_at = ? WHERE key_hash = ?",
                (owner, now + self._lease, khash),
            )
        payload = decode_payload(raw)
        job = Job(
            (str(thread_id), user_id, agent),
            payload.messages,
            payload.signals,
            attempt=int(attempts) + 1,
            enqueued_at=float(first_added),
            urgent=payload.urgent,
        )
        return _Claim(job, str(khash), int(version), owner), None

    def _execute(self, claim: _Claim) -> None:
        """Run one claimed job with no transaction open, then record its outcome."""
        with self._cond:
            self._running[claim.key_hash] = claim
        error: Exception | None = None
        result: object = None
        try:
            result = self._process(claim.job)
        except Exception as exc:
            error = exc
        finally:
            # BaseException (a crash, KeyboardInterrupt) leaves the lease to expire.
            with self._cond:
                self._running.pop(claim.key_hash, None)
        try:
            if error is None:
                self._complete(claim, result)
            else:
                self._fail(claim, error)
        except Exception:
            logger.error(
                "memfold queue could not record the outcome of %s; its lease expires and "
                "the update runs again",
                describe_key(claim.job.key),
                exc_info=True,
            )
        with self._cond:
            self._cond.notify_all()

    def _complete(self, claim: _Claim, result: object) -> None:
        with self._transaction() as tx:
            self._fast_commit(tx)
            deleted = tx.execute(
                "DELETE FROM memfold_jobs WHERE key_hash = ? AND version = ? AND lease_owner = ?",
                (claim.key_hash, claim.version, claim.owner),
            ).rowcount
            if deleted == 0:  # a newer record arrived meanwhile: it stays queued
                tx.execute(
                    "UPDATE memfold_jobs SET lease_owner = NULL, lease_expires_at = NULL "
                    "WHERE key_hash = ? AND lease_owner = ?",
                    (claim.key_hash, claim.owner),
                )
            self._notify(tx)
        usage = getattr(result, "usage", None)
        prompt = getattr(usage, "prompt_tokens", 0)
        completion = getattr(usage, "completion_tokens", 0)
        with self._cond:
            self._processed += 1
            self._prompt_tokens += prompt if isinstance(prompt, int) else 0
            self._completion_tokens += completion if isinstance(completion, int) else 0

    def _fail(self, claim: _Claim, error: Exception) -> None:
        job = claim.job
        message = f"{describe_key(job.key)}: {type(error).__name__}: {error}"[:_MAX_ERROR_CHARS]
        with self._cond:
            self._failed += 1
            self._last_error = message
            flushing = self._flushing > 0
        delay = 0.0 if flushing else self._backoff * 2 ** (job.attempt - 1)
        outcome = "lost"
        with self._transaction() as tx:
            now = self._clock.now()
            row = tx.execute(
                "SELECT payload, version, first_added_at, due_at FROM memfold_jobs "  # noqa: S608 - only module constants are interpolated
                f"WHERE key_hash = ? AND lease_owner = ?{self.for_update}",
                (claim.key_hash, claim.owner),
            ).fetchone()
            if row is not None and int(row[1]) != claim.version:
                outcome = "superseded"
                newer = decode_payload(row[0])
                messages = newer.messages
                if job.urgent:
                    messages = merge_messages(job.messages, newer.messages)
                merged = Payload(
                    messages, newer.signals.merge(job.signals), newer.urgent or job.urgent
                )
                first_added = min(float(row[2]), job.enqueued_at)
                target = now if merged.urgent else min(float(row[3]), first_added + self._max_wait)
                tx.execute(
                    "UPDATE memfold_jobs SET payload = ?, first_added_at = ?, due_at = ?, "
                    "lease_owner = NULL, lease_expires_at = NULL, last_error = ? "
                    "WHERE key_hash = ?",
                    (
                        encode_payload(merged),
                        first_added,
                        max(target, now + delay),
                        message,
                        claim.key_hash,
                    ),
                )
            elif row is not None and job.attempt >= self._retry_attempts:
                outcome = "dropped"
                tx.execute("DELETE FROM memfold_jobs WHERE key_hash = ?", (claim.key_hash,))
            elif row is not None:
                outcome = "retry"
                tx.execute(
                    "UPDATE memfold_jobs SET attempts = ?, due_at = ?, lease_owner = NULL, "
                    "lease_expires_at = NULL, last_error = ? WHERE key_hash = ?",
                    (job.attempt, now + delay, message, claim.key_hash),
                )
            self._notify(tx)
        with self._cond:
            self._dropped += outcome == "dropped"
            self._retried += outcome == "retry"
        self._log_failure(job, error, outcome, delay)

    def _log_failure(self, job: Job, error: Exception, outcome: str, delay: float) -> None:
        where = describe_key(job.key)
        attempts = f"attempt {job.attempt}/{self._retry_attempts}"
        if outcome == "dropped":
            logger.error(
                "memfold update for %s failed (%s); dropped. The watermark did not move, so "
                "the thread's next record sends these messages again",
                where,
                attempts,
                exc_info=error,
            )
        elif outcome == "retry":
            logger.warning(
                "memfold update for %s failed (%s): %s: %s; retrying in %.1fs",
                where,
                attempts,
                type(error).__name__,
                error,
                delay,
            )
        else:
            reason = (
                "a newer record for the thread replaces the retry"
                if outcome == "superseded"
                else "its lease had expired, so another worker owns the job now"
            )
            logger.warning(
                "memfold update for %s failed (%s): %s: %s; %s",
                where,
                attempts,
                type(error).__name__,
                error,
                reason,
            )

    def _work(self) -> None:
        try:
            self._work_loop()
        finally:
            self._release_thread_connection()

    def _work_loop(self) -> None:
        while not self._stop.is_set():
            wait = self.poll_seconds
            try:
                now = self._clock.now()
                claim, next_due = self._claim(now)
            except Exception:
                self._log_worker_error()
                claim, next_due = None, None
            if claim is not None:
                self._execute(claim)
                continue
            if next_due is not None and next_due > now:
                wait = min(wait, next_due - now)
            with self._cond:
                if not self._stop.is_set():
                    self._cond.wait(wait)

    def _log_worker_error(self) -> None:
        with self._cond:
            count = self._error_warning.should_log(time.monotonic())
        if count is not None:
            logger.error(
                "memfold queue worker could not claim a job (%d errors since the last "
                "report); retrying; check the database",
                count,
                exc_info=True,
            )

    def _keep_leases(self) -> None:
        """Renew the leases of this process's running jobs, so slow jobs keep them."""
        try:
            self._renew_loop()
        finally:
            self._release_thread_connection()

    def _renew_loop(self) -> None:
        while not self._stop.wait(self._lease / 3):
            with self._cond:
                claims = list(self._running.values())
            for claim in claims:
                try:
                    with self._transaction() as tx:
                        self._fast_commit(tx)
                        renewed = tx.execute(
                            "UPDATE memfold_jobs SET lease_expires_at = ? "
                            "WHERE key_hash = ? AND lease_owner = ?",
                            (self._clock.now() + self._lease, claim.key_hash, claim.owner),
                        ).rowcount
                except Exception:
                    self._log_worker_error()
                    continue
                if renewed == 0 and claim.key_hash in self._running:
                    logger.warning(
                        "memfold queue: the lease on %s expired before renewal; another "
                        "replica may run it again",
                        describe_key(claim.job.key),
                    )

    def run_due(self, now: float | None = None) -> int:
        """Run, in the calling thread, every job due at ``now`` (default: the clock's
        time); return how many ran. The deterministic step for tests."""
        ran = 0
        while True:
            claim, _ = self._claim(self._clock.now() if now is None else now)
            if claim is None:
                return ran
            self._execute(claim)
            ran += 1

    def flush(self, timeout: float | None = None) -> bool:
        """Make every queued row due now and wait until the table is empty, or ``timeout``
        seconds (real time) passed. Without worker threads, jobs run in the calling thread.
        Retries during a flush skip their backoff. Returns whether the queue drained."""
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._flushing += 1
        try:
            while True:
                now = self._clock.now()
                with self._transaction() as tx:
                    hurried = tx.execute(
                        "UPDATE memfold_jobs SET due_at = ? WHERE due_at > ?", (now, now)
                    ).rowcount
                    left = tx.execute("SELECT COUNT(*) FROM memfold_jobs").fetchone()[0]
                    if hurried:
                        self._notify(tx)
                if not left:
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                claim = None
                if not self._workers_running():
                    claim, _ = self._claim(now)
                if claim is not None:
                    self._execute(claim)
                    continue
                with self._cond:
                    self._cond.wait(min(remaining, self.poll_seconds))
        finally:
            with self._cond:
                self._flushing -= 1

    def _workers_running(self) -> bool:
        return not self._stop.is_set() and any(t.is_alive() for t in self._threads)

    # --- introspection ----------------------------------------------------------------

    def _is_empty(self) -> bool:
        with self._transaction() as tx:
            return int(tx.execute("SELECT COUNT(*) FROM memfold_jobs").fetchone()[0]) == 0

    def _pending_keys(self) -> list[JobKey]:
        with self._transaction() as tx:
            cursor: Any = tx.execute(
                "SELECT thread_id, user_id, agent FROM memfold_jobs ORDER BY due_at"
            )
            return [(str(t), u, a) for t, u, a in cursor.fetchall()]

    def pending_keys(self) -> tuple[JobKey, ...]:
        """Every queued key (all replicas'), earliest due first, running ones included."""
        return tuple(self._pending_keys())

    def status(self) -> QueueStatus:
        """Table-wide pending / in-flight counts and oldest age; this process's counters.

        Raises:
            StorageError: the database could not be read.
        """
        try:
            with self._transaction() as tx:
                now = self._clock.now()
                live = "lease_expires_at IS NOT NULL AND lease_expires_at >= ?"
                pending, in_flight, oldest = tx.execute(
                    f"SELECT SUM(CASE WHEN {live} THEN 0 ELSE 1 END), "  # noqa: S608 - only module constants are interpolated
                    f"SUM(CASE WHEN {live} THEN 1 ELSE 0 END), "
                    f"MIN(CASE WHEN {live} THEN NULL ELSE first_added_at END) "
                    "FROM memfold_jobs",
                    (now, now, now),
                ).fetchone()
        except StorageError:
            raise
        except Exception as exc:
            raise StorageError(f"memfold queue status failed: {exc}; check the database") from exc
        with self._cond:
            return QueueStatus(
                pending=int(pending or 0),
                in_flight=int(in_flight or 0),
                oldest_pending_age_seconds=0.0 if oldest is None else max(0.0, now - oldest),
                processed=self._processed,
                failed=self._failed,
                dropped=self._dropped,
                rejected=self._rejected,
                retried=self._retried,
                last_error=self._last_error,
                prompt_tokens=self._prompt_tokens,
                completion_tokens=self._completion_tokens,
            )
