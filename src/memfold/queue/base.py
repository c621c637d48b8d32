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
    "MAX_RECORD_MARKS",
    "NO_SIGNALS",
    "Job",
    "JobKey",
    "QueueStatus",
    "RecordMark",
    "UpdateQueue",
    "describe_key",
    "earliest",
    "job_key",
]

#: (thread_id, user_id, agent): one conversation of one user with one agent bucket.
JobKey = tuple[str, str | None, str | None]

NO_SIGNALS = Signals()

#: ``(recorded_at, index, message)``: when a record was made and the last message it left.
RecordMark = tuple[float, int, Message]
#: A job remembers at most this many of its records (the newest).
MAX_RECORD_MARKS = 64


def job_key(thread_id: str, user_id: str | None = None, agent: str | None = None) -> JobKey:
    """Build a queue key from its parts."""
    return (thread_id, user_id, agent)


def earliest(first: float | None, second: float | None) -> float | None:
    """The earlier of two optional record times (``None`` when neither is known)."""
    if first is None:
        return second
    return first if second is None else min(first, second)


def describe_key(key: JobKey) -> str:
    """A key for log messages: ``thread 't1', user 'alice'``."""
    thread_id, user_id, agent = key
    return f"thread {thread_id!r}, {Scope(user_id, agent)}"


@dataclass(frozen=True, slots=True)
class Job:
    """One update to run: a thread's latest kept messages and the signals seen since the last
    successful update. ``attempt`` counts from 1; ``enqueued_at`` is the queue clock's time of
    the oldest record the job covers (so ``now - enqueued_at`` is its worst latency).
    ``recorded_at`` is when that oldest record was made by the recorder's own clock (Unix
    seconds; ``None`` when the recorder gave none): a scope cleared after it fences the
    job, in whichever process or replica the clear happened. ``marks`` are
    ``(recorded_at, index, message)`` of the records merged into the job, oldest first
    (``messages[index] == message`` was the last message then), so a fence can forget the
    turns recorded before a clear and still learn the ones after it."""

    key: JobKey
    messages: tuple[Message, ...]
    signals: Signals = NO_SIGNALS
    attempt: int = 1
    enqueued_at: float = 0.0
    urgent: bool = False
    recorded_at: float | None = None
    marks: tuple[RecordMark, ...] = ()

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
    #: UTF-8 bytes of the pending turns (the in-process queue; 0 for durable queues).
    pending_bytes: int = 0


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
        recorded_at: float | None = None,
    ) -> bool:
        """Enqueue a thread's latest messages; False when the queue refused them.

        ``recorded_at`` (Unix seconds, the recorder's clock) travels with the job as the
        time of its oldest record (see :attr:`Job.recorded_at`)."""
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
        """Remove the scope's waiting updates and return them; used by ``clear``, so what
        was said before it is forgotten rather than learned after. A running job is left to
        the clear fence (its ``recorded_at`` predates the clear); records that arrived
        while it ran are returned too."""
        ...
