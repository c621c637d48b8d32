"""What the in-process and the durable queues share: option checks, counters, log texts.

The two queues decide differently *when* a job runs and where it waits, but they validate
the same options, count the same outcomes into :class:`QueueStatus`, and tell operators
about refusals and failures in the same words. Each queue logs to its own logger, so the
helpers take it as an argument.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Self

from memfold.model import Message
from memfold.queue.base import Job, JobKey, QueueStatus, describe_key
from memfold.queue.clock import Clock

__all__ = [
    "DEFAULT_MAX_PENDING_BYTES",
    "MAX_ERROR_CHARS",
    "WARN_INTERVAL_SECONDS",
    "Counters",
    "QueueCore",
    "RateLimitedWarning",
    "check_at_least",
    "log_failure",
    "messages_bytes",
    "warn_refused",
]

#: Seconds between two warnings about refused adds (the count in between is reported).
WARN_INTERVAL_SECONDS = 60.0
#: ``last_error`` is cut to this many characters.
MAX_ERROR_CHARS = 300
#: Pending turns a queue holds at most, in UTF-8 bytes (``max_pending_bytes``).
DEFAULT_MAX_PENDING_BYTES = 256 * 1024 * 1024


def messages_bytes(messages: Sequence[Message]) -> int:
    """The UTF-8 size of the messages' text and ids: what a pending update holds."""
    total = 0
    for message in messages:
        content = message.content
        total += len(content) if content.isascii() else len(content.encode("utf-8", "replace"))
        if message.id:
            total += len(message.id)
    return total


def check_at_least(name: str, value: float, low: float) -> None:
    """Raises:
    ValueError: ``value`` is below ``low`` or NaN, naming the option.
    """
    if not value >= low:  # also rejects NaN
        raise ValueError(f"{name}={value!r}: must be at least {low}")


class RateLimitedWarning:
    """Log a recurring warning at most once per interval, with the count suppressed since."""

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._last: float | None = None
        self._suppressed = 0

    def should_log(self, now: float) -> int | None:
        """The number of events to report now, or None to stay quiet."""
        if self._last is not None and now - self._last < self._interval:
            self._suppressed += 1
            return None
        count = self._suppressed + 1
        self._last, self._suppressed = now, 0
        return count


@dataclass(slots=True)
class Counters:
    """A queue's outcome counters; the owning queue's lock guards every access."""

    processed: int = 0
    failed: int = 0
    dropped: int = 0
    rejected: int = 0
    retried: int = 0
    last_error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def count_success(self, result: object) -> None:
        """Count a processed job and the token usage its result reports, if any."""
        self.processed += 1
        usage = getattr(result, "usage", None)
        prompt = getattr(usage, "prompt_tokens", 0)
        completion = getattr(usage, "completion_tokens", 0)
        self.prompt_tokens += prompt if isinstance(prompt, int) else 0
        self.completion_tokens += completion if isinstance(completion, int) else 0

    def count_failure(self, job: Job, error: Exception) -> str:
        """Count a failed attempt; return the (cut) ``last_error`` it recorded."""
        message = f"{describe_key(job.key)}: {type(error).__name__}: {error}"[:MAX_ERROR_CHARS]
        self.failed += 1
        self.last_error = message
        return message

    def status(
        self, *, pending: int, in_flight: int, oldest_age: float, pending_bytes: int = 0
    ) -> QueueStatus:
        """A :class:`QueueStatus` of these counters and the queue's sizes."""
        return QueueStatus(
            pending=pending,
            pending_bytes=pending_bytes,
            in_flight=in_flight,
            oldest_pending_age_seconds=oldest_age,
            processed=self.processed,
            failed=self.failed,
            dropped=self.dropped,
            rejected=self.rejected,
            retried=self.retried,
            last_error=self.last_error,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
        )


class QueueCore:
    """The options and thread state every queue has; subclasses add how jobs wait.

    Lock discipline: ``_cond`` guards ``_counters``, ``_flushing``, ``_closed``,
    ``_close_result`` and ``_threads``.
    """

    def __init__(
        self,
        process: Callable[[Job], object],
        *,
        debounce_seconds: float,
        max_wait_seconds: float,
        workers: int,
        max_pending: int,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
        retry_attempts: int,
        retry_backoff_seconds: float,
        shutdown_timeout_seconds: float,
        clock: Clock,
    ) -> None:
        """Raises:
        ValueError: naming the first option out of range.
        """
        check_at_least("debounce_seconds", debounce_seconds, 0)
        check_at_least("max_wait_seconds", max_wait_seconds, 0)
        check_at_least("workers", workers, 1)
        check_at_least("max_pending", max_pending, 1)
        check_at_least("max_pending_bytes", max_pending_bytes, 1)
        check_at_least("retry_attempts", retry_attempts, 1)
        check_at_least("retry_backoff_seconds", retry_backoff_seconds, 0)
        check_at_least("shutdown_timeout_seconds", shutdown_timeout_seconds, 0)
        self._process = process
        self._debounce = float(debounce_seconds)
        self._max_wait = float(max_wait_seconds)
        self._worker_count = workers
        self._max_pending = max_pending
        self._max_pending_bytes = max_pending_bytes
        self._retry_attempts = retry_attempts
        self._backoff = float(retry_backoff_seconds)
        self._shutdown_timeout = float(shutdown_timeout_seconds)
        self._clock = clock

        self._cond = threading.Condition(threading.Lock())
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._flushing = 0
        self._closed = False
        self._close_result: bool | None = None
        self._counters = Counters()

    def close(self, timeout: float | None = None) -> bool:
        """Drain within ``timeout``, then stop; return whether everything was processed."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _stop_workers(self, deadline: float, grace: float) -> None:
        """Stop and join the threads until ``deadline`` (``time.monotonic``), each given at
        least ``grace`` seconds; the calling thread is skipped (close() called from a job)."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(max(grace, deadline - time.monotonic()))

    def _log_refused(
        self,
        log: logging.Logger,
        key: JobKey,
        reason: str,
        count: int,
        error: Exception | None = None,
    ) -> None:
        """:func:`warn_refused` with this queue's limits."""
        warn_refused(
            log,
            key,
            reason,
            count,
            max_pending=self._max_pending,
            max_pending_bytes=self._max_pending_bytes,
            error=error,
        )

    def _workers_running(self) -> bool:
        return not self._stop.is_set() and any(t.is_alive() for t in self._threads)


def warn_refused(
    log: logging.Logger,
    key: JobKey,
    reason: str,
    count: int,
    *,
    max_pending: int,
    max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
    error: Exception | None = None,
) -> None:
    """Log why an add was refused: ``closed``, ``full`` (keys), ``bytes`` (pending turns
    over ``max_pending_bytes``), or (durable queues) ``error``."""
    where = describe_key(key)
    if reason == "closed":
        log.warning(
            "memfold queue is closed: update for %s not queued (%d refused since the "
            "last warning); record before closing Memory",
            where,
            count,
        )
    elif reason == "bytes":
        log.warning(
            "memfold queue holds max_pending_bytes=%d of pending turns: update for %s not "
            "queued (%d refused since the last warning); raise max_pending_bytes or add "
            "workers",
            max_pending_bytes,
            where,
            count,
        )
    elif reason == "full":
        log.warning(
            "memfold queue is full (%d pending keys): update for %s not queued (%d "
            "refused since the last warning); raise max_pending or add workers",
            max_pending,
            where,
            count,
        )
    else:
        log.error(
            "memfold queue database failed: update for %s not queued (%d refused since "
            "the last error); check the database",
            where,
            count,
            exc_info=error,
        )


def log_failure(
    log: logging.Logger,
    job: Job,
    error: Exception,
    outcome: str,
    delay: float,
    *,
    retry_attempts: int,
    drop_note: str = "",
) -> None:
    """Log a failed attempt by its outcome: ``dropped`` (an error, with the traceback),
    ``retry``, ``superseded`` by a newer record, or (durable queues) ``lost`` lease.
    ``drop_note`` is appended to the attempt count of a drop (e.g. ``, not retryable``)."""
    where = describe_key(job.key)
    attempts = f"attempt {job.attempt}/{retry_attempts}"
    if outcome == "dropped":
        log.error(
            "memfold update for %s failed (%s%s); dropped. The watermark did not move, "
            "so the thread's next record sends these messages again",
            where,
            attempts,
            drop_note,
            exc_info=error,
        )
    elif outcome == "retry":
        when = f"in {delay:.1f}s" if delay > 0 else "at once (a flush skips the backoff)"
        log.warning(
            "memfold update for %s failed (%s): %s: %s; retrying %s",
            where,
            attempts,
            type(error).__name__,
            error,
            when,
        )
    else:
        reason = (
            "a newer record for the thread replaces the retry"
            if outcome == "superseded"
            else "its lease had expired, so another worker owns the job now"
        )
        log.warning(
            "memfold update for %s failed (%s): %s: %s; %s",
            where,
            attempts,
            type(error).__name__,
            error,
            reason,
        )
