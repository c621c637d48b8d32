"""The consumer half of the durable queues: claims, leases, outcomes, and dialect hooks.

A worker *claims* the earliest due row whose (user, agent) has no other live lease by
writing a lease (owner token + expiry) — with a batch processor, on the scope's other due
rows too, so one extraction takes every busy thread of the user — runs the job with no
transaction open, then deletes the row only if its version is unchanged; otherwise the
newer version stays queued. A failure bumps ``attempts`` and backs off (or merges into a
newer record); after ``retry_attempts`` the row is dropped. A keeper thread renews this
process's leases every third of ``lease_seconds``. :class:`memfold.queue._sql.SqlQueue`
adds the producer side.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from memfold.queue._common import (
    MAX_ERROR_CHARS,
    WARN_INTERVAL_SECONDS,
    QueueCore,
    RateLimitedWarning,
    check_at_least,
    log_failure,
)
from memfold.queue._payload import Payload, decode_payload, encode_payload, scope_hash
from memfold.queue.base import Job, JobKey, describe_key, earliest
from memfold.watermark import merge_record

__all__ = ["Claim", "Cursor", "SqlWorker", "Tx", "claimed_version"]

logger = logging.getLogger("memfold.queue")

_COLUMNS = "key_hash, thread_id, user_id, agent, payload, version, first_added_at, attempts"


def claimed_version(owner: object) -> int | None:
    """The row version a lease owner token claimed (``None`` when the token has none).

    A lease's owner is ``{instance}-{random}@{version}``, so a record that finds its row
    leased can tell whether the row still holds the running job's payload or already
    holds records added since the claim."""
    if not isinstance(owner, str) or "@" not in owner:
        return None
    try:
        return int(owner.rsplit("@", 1)[1])
    except ValueError:
        return None


class Cursor(Protocol):
    """The DB-API subset both drivers provide."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Tx(Protocol):
    """An open transaction; SQL uses ``?`` placeholders (dialects translate)."""

    def execute(self, sql: str, params: Sequence[object] = ()) -> Cursor: ...


@dataclass(frozen=True, slots=True)
class Claim:
    """A row this process leased: the job, and what proves the lease is still its own."""

    job: Job
    key_hash: str
    version: int
    owner: str


class SqlWorker(QueueCore):
    """Claims and runs due rows, renews leases; subclasses supply the dialect hooks."""

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
        lease_seconds: float,
        process_batch: Callable[[Sequence[Job]], object] | None = None,
        **options: Any,
    ) -> None:
        """``process_batch(jobs)``: see :class:`memfold.queue.memory.InProcessQueue`; a
        claim then leases every due row of the scope at once.

        Raises:
            ValueError: naming the first option out of range.
        """
        super().__init__(process, **options)
        self._process_batch = process_batch
        check_at_least("lease_seconds", lease_seconds, 0.1)
        self._lease = float(lease_seconds)
        self._instance = uuid.uuid4().hex[:12]
        self._running: dict[str, Claim] = {}  # key hash → this process's running claim
        self._error_warning = RateLimitedWarning(WARN_INTERVAL_SECONDS)

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

    # --- consumer side ----------------------------------------------------------------

    def _claim(self, now: float) -> tuple[tuple[Claim, ...], float | None]:
        """Lease the earliest due row whose scope is free (with a batch processor, and
        the scope's other due rows with it); else () and the next due time."""
        with self._transaction() as tx:
            self._fast_commit(tx)
            self._claim_lock(tx)
            while True:
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
                    return (), None if nxt is None else float(nxt)
                first = self._lease_row(tx, row, now)
                if first is not None:
                    break
            claims = [first]
            if self._process_batch is not None:
                rows = tx.execute(
                    f"SELECT {_COLUMNS} FROM memfold_jobs WHERE scope_hash = ? "  # noqa: S608 - only module constants are interpolated
                    "AND key_hash <> ? AND due_at <= ? "
                    "AND (lease_expires_at IS NULL OR lease_expires_at < ?) "
                    f"ORDER BY due_at{self.skip_locked}",
                    (scope_hash(first.job.key), first.key_hash, now, now),
                ).fetchall()
                claims += [c for r in rows if (c := self._lease_row(tx, r, now)) is not None]
        return tuple(claims), None

    def _lease_row(self, tx: Tx, row: Sequence[Any], now: float) -> Claim | None:
        """Write this process's lease on a claimed row; None when its payload cannot be
        read (the row is dropped, loudly)."""
        khash, thread_id, user_id, agent, raw, version, first_added, attempts = row
        key = (str(thread_id), user_id, agent)
        try:
            payload = decode_payload(raw)
        except ValueError as exc:
            # leased and failing forever, it would also starve its scope's other
            # threads: drop it, loudly, and look for the next due row
            self._drop_unreadable(tx, key, str(khash), exc)
            return None
        owner = f"{self._instance}-{uuid.uuid4().hex[:12]}@{int(version)}"
        tx.execute(
            "UPDATE memfold_jobs SET lease_owner = ?, lease_expires_at = ? WHERE key_hash = ?",
            (owner, now + self._lease, khash),
        )
        job = Job(
            key,
            payload.messages,
            payload.signals,
            attempt=int(attempts) + 1,
            enqueued_at=float(first_added),
            urgent=payload.urgent,
            recorded_at=payload.recorded_at,
        )
        return Claim(job, str(khash), int(version), owner)

    def _drop_unreadable(self, tx: Tx, key: JobKey, khash: str, error: ValueError) -> None:
        tx.execute("DELETE FROM memfold_jobs WHERE key_hash = ?", (khash,))
        with self._cond:
            self._counters.dropped += 1
            self._counters.last_error = f"{describe_key(key)}: {error}"[:MAX_ERROR_CHARS]
        logger.error(
            "memfold queue: the queued update for %s cannot be read (%s); dropped. The "
            "watermark did not move, so the thread's next record sends these messages again",
            describe_key(key),
            error,
        )

    def _execute(self, claims: Sequence[Claim]) -> None:
        """Run one claimed job, or one scope's batch, with no transaction open, then
        record each job's outcome (a batch's usage is counted once)."""
        with self._cond:
            for claim in claims:
                self._running[claim.key_hash] = claim
        error: Exception | None = None
        result: object = None
        try:
            if len(claims) > 1 and self._process_batch is not None:
                result = self._process_batch([claim.job for claim in claims])
            else:
                result = self._process(claims[0].job)
        except Exception as exc:
            error = exc
        finally:
            # BaseException (a crash, KeyboardInterrupt) leaves the leases to expire.
            with self._cond:
                for claim in claims:
                    self._running.pop(claim.key_hash, None)
        for n, claim in enumerate(claims):
            try:
                if error is None:
                    self._complete(claim, result if n == 0 else None)
                else:
                    self._fail(claim, error)
            except Exception:
                logger.error(
                    "memfold queue could not record the outcome of %s; its lease expires "
                    "and the update runs again",
                    describe_key(claim.job.key),
                    exc_info=True,
                )
        with self._cond:
            self._cond.notify_all()

    def _complete(self, claim: Claim, result: object) -> None:
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
        with self._cond:
            self._counters.count_success(result)

    def _fail(self, claim: Claim, error: Exception) -> None:
        job = claim.job
        with self._cond:
            message = self._counters.count_failure(job, error)
            flushing = self._flushing > 0
        delay = 0.0 if flushing else self._backoff * 2 ** (job.attempt - 1)
        retryable = getattr(error, "retryable", True) is not False
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
                messages = merge_record(job.messages, newer.messages)
                merged = Payload(
                    messages,
                    newer.signals.merge(job.signals),
                    newer.urgent or job.urgent,
                    earliest(newer.recorded_at, job.recorded_at),
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
            elif row is not None and (job.attempt >= self._retry_attempts or not retryable):
                # an error that says retrying cannot help (a rejected API key) drops at once
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
            self._counters.dropped += outcome == "dropped"
            self._counters.retried += outcome == "retry"
        log_failure(
            logger,
            job,
            error,
            outcome,
            delay,
            retry_attempts=self._retry_attempts,
            drop_note="" if retryable else ", not retryable",
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
                claims, next_due = self._claim(now)
            except Exception:
                self._log_worker_error()
                claims, next_due = (), None
            if claims:
                self._execute(claims)
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
            claims, _ = self._claim(self._clock.now() if now is None else now)
            if not claims:
                return ran
            self._execute(claims)
            ran += len(claims)
