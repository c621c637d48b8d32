"""What the update queue holds and reports, and the protocol every queue backend follows.

A queue knows nothing about storage or LLMs: it groups records per key, decides *when* a
key's update runs, and calls back a ``process(job)`` function that does the work.

Optional methods a queue may add (the built-in ones have them; ``Memory`` checks):
``forget_user(user_id) -> int`` deletes every queued update of a user (``forget_user``
fails with a clear error on a queue without it), ``running_jobs(scope)`` and
``running_jobs_of(user_id)`` list the jobs this process runs now (so a ``clear`` or an
erasure can fence them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from memfold.model import Message, Scope, Signals

__all__ = [
    "NO_SIGNALS",
    "Job",
    "JobKey",
    "QueueStatus",
    "UpdateQueue",
    "describe_key",
    "job_key",
]

#: (thread_id, user_id, agent): one conversation of one user with one agent bucket.
JobKey = tuple[str, str | None, str | None]

NO_SIGNALS = Signals()


def job_key(thread_id: str, user_id: str | None = None, agent: str | None = None) -> JobKey:
    """Build a queue key from its parts."""
    return (thread_id, user_id, agent)


def describe_key(key: JobKey) -> str:
    """A key for log messages: ``thread 't1', user 'alice'``."""
    thread_id, user_id, agent = key
    return f"thread {thread_id!r}, {Scope(user_id, agent)}"


@dataclass(frozen=True, slots=True)
class Job:
    """One update to run: a thread's latest kept messages and the signals seen since the last
    successful update. ``attempt`` counts from 1; ``enqueued_at`` is the queue clock's time of
    the oldest record the job covers (so ``now - enqueued_at`` is its worst latency)."""

    key: JobKey
    messages: tuple[Message, ...]
    signals: Signals = NO_SIGNALS
    attempt: int = 1
    enqueued_at: float = 0.0
    urgent: bool = False

    @property
    def thread_id(self) -> str:
        return self.key[0]

    @property
    def user_id(self) -> str | None:
        return self.key[1]

    @property
    def agent(self) -> str | None:
        return self.key[2]

    @property
    def scope(self) -> Scope:
        return Scope(self.key[1], self.key[2])


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """A snapshot of a queue. ``failed`` counts attempts that raised, ``dropped`` jobs given up
    after their last attempt, ``rejected`` adds refused by backpressure or after close."""

    pending: int = 0
    in_flight: int = 0
    oldest_pending_age_seconds: float = 0.0
    processed: int = 0
    failed: int = 0
    dropped: int = 0
    rejected: int = 0
    retried: int = 0
    last_error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0


@runtime_checkable
class UpdateQueue(Protocol):
    """A debounced, keyed update queue (in-process, or SQL-backed and durable)."""

    def add(
        self,
        key: JobKey,
        messages: Sequence[Message],
        signals: Signals = NO_SIGNALS,
        *,
        urgent: bool = False,
    ) -> bool:
        """Enqueue a thread's latest messages; False when the queue refused them."""
        ...

    def flush(self, timeout: float | None = None) -> bool:
        """Run everything pending now; True when nothing is left pending or in flight."""
        ...

    def close(self, timeout: float | None = None) -> bool:
        """Drain within the timeout, then stop; True when everything was processed."""
        ...

    def status(self) -> QueueStatus:
        """Counters and sizes, cheap enough to poll."""
        ...

    def run_due(self, now: float | None = None) -> int:
        """Run, in the calling thread, every job due at ``now``; return how many ran."""
        ...

    def discard(self, scope: Scope) -> tuple[Job, ...]:
        """Remove the scope's waiting updates (not a running one) and return them; used by
        ``clear``, so what was said before it is forgotten rather than learned after."""
        ...
