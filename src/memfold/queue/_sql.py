"""Shared mechanics of the durable queues (``queue: sqlite`` and ``queue: postgres``).

One row per key in ``memfold_jobs`` holds the key's latest payload. ``add`` upserts it:
the messages are combined by ``merge_record`` (a record repeating the thread replaces
them, one holding only new turns is merged in), signals are OR-merged, the
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
and wake-ups; the consumer half (claims, leases, outcomes) is in ``_sql_worker``, the
producer side, lifecycle and introspection here.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from memfold.errors import StorageError
from memfold.model import Message, Scope, Signals
from memfold.queue._common import (
    DEFAULT_MAX_PENDING_BYTES,
    WARN_INTERVAL_SECONDS,
    RateLimitedWarning,
)
from memfold.queue._payload import Payload, decode_payload, encode_payload, key_hash, scope_hash
from memfold.queue._sql_worker import Claim, Cursor, SqlWorker, Tx, claimed_version
from memfold.queue.base import NO_SIGNALS, Job, JobKey, QueueStatus, describe_key, earliest
from memfold.queue.clock import Clock
from memfold.watermark import merge_record

__all__ = ["SCHEMA_VERSION", "Cursor", "SqlQueue", "Tx", "WallClock", "install_schema"]

logger = logging.getLogger("memfold.queue")

#: Version of the ``memfold_jobs`` layout, recorded in ``memfold_queue_schema``.
SCHEMA_VERSION = 1
_INSERT_RETRIES = 5
_STOP_GRACE_SECONDS = 0.5


class WallClock:
    """``time.time``: the one clock several processes (and machines) agree on."""

    def now(self) -> float:
        return time.time()


def install_schema(tx: Tx, create_jobs: str, *, database: str) -> None:
    """Create the tables and indexes that do not exist (``create_jobs``: the dialect's
    ``CREATE TABLE IF NOT EXISTS memfold_jobs``, whose column types differ) and record
    :data:`SCHEMA_VERSION` in a new database; ``database`` names it in the error.

    Raises:
        StorageError: the database records a newer schema version than this memfold's.
    """
    for statement in (
        "CREATE TABLE IF NOT EXISTS memfold_queue_schema (version INTEGER NOT NULL)",
        create_jobs,
        "CREATE INDEX IF NOT EXISTS memfold_jobs_due ON memfold_jobs (due_at)",
        "CREATE INDEX IF NOT EXISTS memfold_jobs_scope "
        "ON memfold_jobs (scope_hash, lease_expires_at)",
    ):
        tx.execute(statement)
    row = tx.execute("SELECT MAX(version) FROM memfold_queue_schema").fetchone()
    found = None if row is None else row[0]
    if found is None:
        tx.execute("INSERT INTO memfold_queue_schema (version) VALUES (?)", (SCHEMA_VERSION,))
    elif int(found) > SCHEMA_VERSION:
        raise StorageError(
            f"{database} has schema version {found}, newer than this memfold's "
            f"{SCHEMA_VERSION}; upgrade memfold"
        )


class SqlQueue(SqlWorker):
    """The durable debounced queue over a SQL table; subclasses supply the dialect.

    ``start=False`` starts no thread: tests drive it with a clock and :meth:`run_due`.
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
        lease_seconds: float = 150.0,
        clock: Clock | None = None,
        process_batch: Callable[[Sequence[Job]], object] | None = None,
    ) -> None:
        """Raises:
        ValueError: naming the first option out of range.
        """
        super().__init__(
            process,
            process_batch=process_batch,
            debounce_seconds=debounce_seconds,
            max_wait_seconds=max_wait_seconds,
            workers=workers,
            max_pending=max_pending,
            max_pending_bytes=max_pending_bytes,
            retry_attempts=retry_attempts,
            retry_backoff_seconds=retry_backoff_seconds,
            shutdown_timeout_seconds=shutdown_timeout_seconds,
            lease_seconds=lease_seconds,
            clock=clock if clock is not None else WallClock(),
        )
        self._reject_warning = RateLimitedWarning(WARN_INTERVAL_SECONDS)

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
        try:
            drained = self.flush(budget) if budget > 0 else self._is_empty()
        except Exception:
            # the workers must still stop and the connections close: the rows stay queued
            logger.warning("memfold queue: could not drain at close", exc_info=True)
            drained = False
        # a short grace even at timeout 0: idle workers leave within one claim
        self._stop_workers(deadline, grace=_STOP_GRACE_SECONDS)
        try:
            left = self._pending_keys()
        except Exception:
            logger.warning("memfold queue: could not list pending keys at close", exc_info=True)
            left = []
        with self._cond:
            self._close_result = drained and not left
        if left:
            # A queue without workers of its own closed with no drain budget (a producer,
            # or the CLI reading status) leaves the rows to the workers by design.
            producer_only = budget <= 0 and not self._threads
            logger.log(
                logging.INFO if producer_only else logging.WARNING,
                "memfold queue closed with %d update(s) still queued; they stay in the "
                "durable queue and run when a replica next runs: %s",
                len(left),
                "; ".join(describe_key(key) for key in left[:20]),
            )
        self._close_connections()
        return bool(self._close_result)

    # --- producer side ----------------------------------------------------------------

    def add(
        self,
        key: JobKey,
        messages: Sequence[Message],
        signals: Signals = NO_SIGNALS,
        *,
        urgent: bool = False,
        recorded_at: float | None = None,
    ) -> bool:
        """Upsert the key's row (see the module docstring); never raises. Returns False when
        refused (counted and logged): a new key beyond ``max_pending``, a key whose pending
        turns would exceed ``max_pending_bytes``, the queue is closed, or the database
        failed."""
        batch = Payload(tuple(messages), signals, urgent, recorded_at)
        with self._cond:
            closed = self._closed
            flushing = self._flushing > 0
        if closed:
            self._refuse(key, "closed")
            return False
        try:
            refused = self._upsert(key, batch, flushing)
        except Exception as exc:
            self._refuse(key, "error", exc)
            return False
        if refused is not None:
            self._refuse(key, refused)
            return False
        with self._cond:
            self._cond.notify()
        return True

    def _upsert(self, key: JobKey, batch: Payload, flushing: bool) -> str | None:
        """Insert or merge the key's row; None, or why it was refused (``full``, ``bytes``)."""
        khash = key_hash(key)
        for _ in range(_INSERT_RETRIES):
            with self._transaction() as tx:
                now = self._clock.now()
                row = tx.execute(
                    "SELECT payload, first_added_at, due_at, attempts, lease_expires_at, "  # noqa: S608 - only module constants are interpolated
                    "lease_owner, version "
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
                        return "full"
                    text = encode_payload(batch)
                    if len(text.encode("utf-8")) > self._max_pending_bytes:
                        return "bytes"
                    due = (
                        now
                        if batch.urgent or flushing
                        else now + min(self._debounce, self._max_wait)
                    )
                    inserted = tx.execute(
                        "INSERT INTO memfold_jobs (key_hash, scope_hash, thread_id, user_id, "
                        "agent, payload, version, first_added_at, due_at, attempts) "
                        "VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, 0) ON CONFLICT (key_hash) DO NOTHING",
                        (khash, scope_hash(key), *key, text, now, due),
                    ).rowcount
                    if inserted != 1:
                        continue  # another replica inserted the key first: update it instead
                else:
                    old_payload, first_added, old_due, attempts, lease_expires, owner, version = row
                    leased = lease_expires is not None and float(lease_expires) >= now
                    payload, first_added, due = self._merge(
                        decode_payload(old_payload),
                        batch,
                        now=now,
                        first_added=float(first_added),
                        old_due=float(old_due),
                        retrying=int(attempts) > 0,
                        # the row still holds the running job's payload (no record since the
                        # claim); once one landed, later ones merge into it like any pending row
                        in_flight=leased and claimed_version(owner) in (None, int(version)),
                        flushing=flushing,
                    )
                    text = encode_payload(payload)
                    if len(text.encode("utf-8")) > self._max_pending_bytes:
                        return "bytes"
                    tx.execute(
                        "UPDATE memfold_jobs SET payload = ?, version = version + 1, "
                        "first_added_at = ?, due_at = ?, attempts = 0 WHERE key_hash = ?",
                        (text, first_added, due, khash),
                    )
                if due <= now:
                    self._notify(tx)
                return None
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
            payload = Payload(
                merge_record(old.messages, batch.messages),
                old.signals.merge(batch.signals),
                batch.urgent or old.urgent,
                earliest(old.recorded_at, batch.recorded_at),
            )
        if payload.urgent or flushing:
            return payload, first_added, now
        due = min(now + self._debounce, first_added + self._max_wait)
        if retrying and not in_flight:
            due = max(due, old_due)  # a later record does not cut a retry's backoff short
        return payload, first_added, due

    def _refuse(self, key: JobKey, reason: str, error: Exception | None = None) -> None:
        with self._cond:
            self._counters.rejected += 1
            warner = self._error_warning if reason == "error" else self._reject_warning
            count = warner.should_log(time.monotonic())
        if count is not None:
            self._log_refused(logger, key, reason, count, error)

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
                claims: tuple[Claim, ...] = ()
                if not self._workers_running():
                    claims, _ = self._claim(now)
                if claims:
                    self._execute(claims)
                    continue
                with self._cond:
                    self._cond.wait(min(remaining, self.poll_seconds))
        finally:
            with self._cond:
                self._flushing -= 1

    # --- introspection ----------------------------------------------------------------

    def discard(self, scope: Scope) -> tuple[Job, ...]:
        """Remove what the scope's rows hold, in every replica, and return it as jobs.

        A waiting row is deleted. A row a worker holds a live lease on keeps that lease
        (its running job is fenced by the clear's time); records that arrived while it ran
        are taken out of it too, leaving it empty, so none of them runs after the clear.
        """
        shash = scope_hash(("", scope.user_id, scope.agent))
        jobs: list[Job] = []
        with self._transaction() as tx:
            now = self._clock.now()
            rows = tx.execute(
                "SELECT key_hash, thread_id, user_id, agent, payload, version, lease_owner, "  # noqa: S608 - only module constants are interpolated
                f"lease_expires_at FROM memfold_jobs WHERE scope_hash = ?{self.for_update}",
                (shash,),
            ).fetchall()
            for khash, thread_id, user_id, agent, payload, version, owner, expires in rows:
                leased = expires is not None and float(expires) >= now
                if leased and claimed_version(owner) in (None, int(version)):
                    continue  # holds only the running job's own messages
                if leased:
                    tx.execute(
                        "UPDATE memfold_jobs SET payload = ?, version = version + 1, "
                        "first_added_at = ?, due_at = ?, attempts = 0 WHERE key_hash = ?",
                        (encode_payload(Payload((), NO_SIGNALS)), now, now, khash),
                    )
                else:
                    tx.execute("DELETE FROM memfold_jobs WHERE key_hash = ?", (khash,))
                try:
                    batch = decode_payload(payload)
                except ValueError:
                    continue  # unreadable: removing it is all a clear needs
                key = (str(thread_id), user_id, agent)
                jobs.append(Job(key, batch.messages, batch.signals, urgent=batch.urgent))
        with self._cond:
            self._cond.notify_all()
        return tuple(jobs)

    def forget_user(self, user_id: str | None) -> int:
        """Delete every row of ``user_id``, leased ones included (a running job's outcome
        then finds no row and records nothing); returns how many rows there were.

        Raises:
            StorageError: the database failed; nothing was deleted.
        """
        with self._transaction() as tx:
            if user_id is None:
                deleted = tx.execute("DELETE FROM memfold_jobs WHERE user_id IS NULL").rowcount
            else:
                deleted = tx.execute(
                    "DELETE FROM memfold_jobs WHERE user_id = ?", (user_id,)
                ).rowcount
        self._after_erase()
        with self._cond:
            self._cond.notify_all()
        return int(deleted)

    def _after_erase(self) -> None:
        """Make the deleted rows unrecoverable from the database's files, where the
        dialect can (outside any transaction)."""

    def running_jobs_of(self, user_id: str | None) -> tuple[Job, ...]:
        """The user's jobs this process is running now (any agent)."""
        with self._cond:
            return tuple(c.job for c in self._running.values() if c.job.user_id == user_id)

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
            return self._counters.status(
                pending=int(pending or 0),
                in_flight=int(in_flight or 0),
                oldest_age=0.0 if oldest is None else max(0.0, now - oldest),
            )
