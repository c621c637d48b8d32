"""``open_queue``: the ``queue`` setting → an :class:`~memfold.queue.base.UpdateQueue`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from memfold._plugins import load_factory
from memfold.config import MemoryConfig
from memfold.errors import ConfigError
from memfold.queue.base import Job, UpdateQueue
from memfold.queue.clock import Clock

__all__ = ["LEASE_MARGIN_SECONDS", "lease_seconds_for", "open_queue"]

#: Added to ``extraction_timeout_seconds`` for a durable queue's lease; leases are also
#: renewed every third of their length while a job runs.
LEASE_MARGIN_SECONDS = 2.0


def lease_seconds_for(config: MemoryConfig) -> float:
    """How long a claimed job stays leased without renewal."""
    return config.extraction_timeout_seconds + LEASE_MARGIN_SECONDS


def open_queue(
    config: MemoryConfig,
    process: Callable[[Job], object],
    *,
    clock: Clock | None = None,
    start: bool = True,
    lease_seconds: float | None = None,
    process_batch: Callable[[Sequence[Job]], object] | None = None,
) -> UpdateQueue:
    """Build the queue that ``config.queue`` names, running ``process(job)`` per update.

    ``memory`` → :class:`InProcessQueue` (its default clock is monotonic); ``sqlite`` →
    :class:`SqliteQueue` on ``{home}/memfold-queue.sqlite3``; ``postgres`` →
    :class:`PostgresQueue` on ``dsn``; ``package.module:Factory`` →
    ``Factory(config, process, clock=clock, start=start)``. Durable queues default to
    the wall clock, which every replica shares. The built-in queues take a scope's due
    jobs together and run them through ``process_batch(jobs)`` when it is given.

    Raises:
        ConfigError: unknown backend, missing driver, or a factory that fails to import.
        StorageError: the queue database cannot be opened.
    """
    options: dict[str, Any] = {
        "debounce_seconds": config.debounce_seconds,
        "max_wait_seconds": config.max_wait_seconds,
        "workers": config.workers,
        "max_pending": config.max_pending,
        "max_pending_bytes": config.max_pending_bytes,
        "retry_attempts": config.retry_attempts,
        "retry_backoff_seconds": config.retry_backoff_seconds,
        "shutdown_timeout_seconds": config.shutdown_timeout_seconds,
        "clock": clock,
        "start": start,
        "process_batch": process_batch,
    }
    kind = config.queue
    if kind == "memory":
        from memfold.queue.memory import InProcessQueue

        return InProcessQueue(process, **options)
    lease = lease_seconds_for(config) if lease_seconds is None else lease_seconds
    if kind == "sqlite":
        from memfold.queue.sqlite import QUEUE_FILE, SqliteQueue

        return SqliteQueue(config.home / QUEUE_FILE, process, lease_seconds=lease, **options)
    if kind == "postgres":
        if not config.dsn:
            raise ConfigError(
                "queue=postgres needs dsn (e.g. postgresql://user@host/db)", key="dsn"
            )
        from memfold.queue.postgres import PostgresQueue

        return PostgresQueue(
            config.dsn,
            process,
            lease_seconds=lease,
            connect_timeout_seconds=config.connect_timeout_seconds,
            **options,
        )
    if ":" in kind:
        return _from_factory(kind, config, process, clock=clock, start=start)
    raise ConfigError(
        f"queue={kind!r}: use memory, sqlite, postgres or 'package.module:Factory'", key="queue"
    )


def _from_factory(
    spec: str,
    config: MemoryConfig,
    process: Callable[[Job], object],
    *,
    clock: Clock | None,
    start: bool,
) -> UpdateQueue:
    factory = load_factory(spec, key="queue")
    queue = factory(config, process, clock=clock, start=start)
    if not isinstance(queue, UpdateQueue):
        raise ConfigError(
            f"queue={spec!r}: the factory returned {type(queue).__name__}, which lacks the "
            "UpdateQueue methods (add, flush, close, status, run_due, discard)",
            key="queue",
        )
    return queue
