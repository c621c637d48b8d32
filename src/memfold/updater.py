"""One update: load → watermark → extract → apply → commit, with CAS retries and the
clear fence. Used by ``Memory.update`` directly and by the queue's workers.

A run of new turns too large for one extraction request (``max_input_tokens``) is
extracted in ordered chunks; each chunk is committed with the watermark moved past it,
so a failure resumes after the last committed chunk and no request exceeds the bound.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from memfold import _events, watermark
from memfold._batch import BatchResult, ThreadWork, run_batch
from memfold._facts import iso
from memfold._fence import cleared_time, recorded_before_clear
from memfold.apply import ApplyContext, Change, apply
from memfold.errors import ConflictError
from memfold.extract.base import ExtractionRequest, Extractor, SizedExtractor, Usage
from memfold.gate import ExtractionGate
from memfold.history import ChangeEvent
from memfold.model import MemoryDocument, Message, Scope, Signals, short_repr
from memfold.queue.base import RecordMark
from memfold.redact import Redactor, redact_messages
from memfold.store.base import MemoryStore

__all__ = [
    "DEFAULT_CONFLICT_TIMEOUT_SECONDS",
    "GATED",
    "MAX_COMMIT_ATTEMPTS",
    "UpdateResult",
    "Updater",
    "log_dropped",
    "retry_on_conflict",
]

logger = logging.getLogger("memfold.update")

#: Commits that race are retried at least this often before a ConflictError...
MAX_COMMIT_ATTEMPTS = 10
#: ...and for at least this long (``conflict_timeout_seconds``).
DEFAULT_CONFLICT_TIMEOUT_SECONDS = 10.0
_CONFLICT_BACKOFF_SECONDS = 0.001
_CONFLICT_BACKOFF_CAP_SECONDS = 0.05
_SCOPE_LOCK_STRIPES = 64
#: ``UpdateResult.skipped`` starts with this when the extraction gate made no call.
GATED = "nothing about the user"

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class UpdateResult:
    """What one update did. ``committed`` is False when nothing changed or it was fenced."""

    scope: Scope
    thread_id: str | None
    revision: int
    committed: bool
    changes: tuple[Change, ...] = ()
    usage: Usage = field(default_factory=Usage)
    messages_sent: int = 0
    skipped: str | None = None
    #: How many extraction requests the update made (a long run of new turns is chunked).
    requests: int = 0

    def count(self, kind: str) -> int:
        return sum(1 for change in self.changes if change.kind == kind)

    @property
    def facts_added(self) -> int:
        return self.count("added")

    @property
    def facts_removed(self) -> int:
        """Facts that left memory: removed, superseded or evicted."""
        return self.count("removed") + self.count("superseded") + self.count("evicted")


class Updater:
    """Runs single updates against a store with an extractor.

    ``max_input_tokens`` bounds one extraction request (for extractors that can measure
    theirs, see :class:`~memfold.extract.base.SizedExtractor`); ``conflict_timeout``
    how long racing commits are retried before a ``ConflictError``. Commits of one scope
    from this process take turns on a lock, so they do not race each other at all.
    """

    def __init__(
        self,
        store: MemoryStore,
        extractor: Extractor,
        *,
        max_facts: int,
        confidence_threshold: float,
        now: Callable[[], datetime],
        redactor: Redactor | None = None,
        max_input_tokens: int | None = None,
        conflict_timeout: float = DEFAULT_CONFLICT_TIMEOUT_SECONDS,
        record_history: bool = False,
        gate: ExtractionGate | None = None,
    ) -> None:
        """``record_history``: pass change events to ``store.commit`` (a
        :class:`~memfold.store.base.HistoryStore`). ``gate``: new turns it finds nothing
        about the user in are only marked seen, with no extraction call."""
        self._store = store
        self._gate = gate
        self._history = record_history
        self._redactor = redactor
        self._extractor = extractor
        self._max_facts = max_facts
        self._threshold = confidence_threshold
        self._now = now
        self._max_input = max_input_tokens
        self._conflict_timeout = conflict_timeout
        self._stripes = tuple(threading.Lock() for _ in range(_SCOPE_LOCK_STRIPES))

    @property
    def extractor(self) -> Extractor:
        return self._extractor

    @property
    def store(self) -> MemoryStore:
        return self._store

    @property
    def gate(self) -> ExtractionGate | None:
        return self._gate

    @property
    def redactor(self) -> Redactor | None:
        return self._redactor

    @property
    def max_input_tokens(self) -> int | None:
        return self._max_input

    def now(self) -> datetime:
        return self._now()

    def apply_context(
        self,
        now: datetime,
        thread_id: str,
        signals: Signals,
        *,
        instructions: tuple[str, ...] = (),
        turns: tuple[Message, ...] | None = None,
    ) -> ApplyContext:
        """The context ``apply`` runs in for an extraction from ``thread_id`` of
        ``turns`` with a prompt of ``instructions`` (the guards' evidence)."""
        return ApplyContext(
            now=now,
            thread_id=thread_id,
            signals=signals,
            max_facts=self._max_facts,
            confidence_threshold=self._threshold,
            scrub=self._redactor,
            instructions=instructions,
            turns=turns,
        )

    def run_batch(self, scope: Scope, works: Sequence[ThreadWork]) -> BatchResult:
        """Update ``scope`` from several threads at once, with one extraction for all
        their new turns where they fit one request (see :mod:`memfold._batch`)."""
        return run_batch(self, scope, works)

    @contextlib.contextmanager
    def scope_lock(self, scope: Scope) -> Iterator[None]:
        """Serialise this process's read-modify-writes of ``scope`` (striped locks)."""
        digest = hashlib.blake2b(repr(scope).encode("utf-8", "replace"), digest_size=4)
        with self._stripes[int.from_bytes(digest.digest(), "big") % len(self._stripes)]:
            yield

    def retry(self, scope: Scope, attempt: Callable[[], _T]) -> _T:
        """``attempt`` (load, change, commit) under the scope's lock, retried on conflicts
        with other processes until ``conflict_timeout`` (see :func:`retry_on_conflict`)."""

        def locked() -> _T:
            with self.scope_lock(scope):
                return attempt()

        return retry_on_conflict(locked, timeout=self._conflict_timeout)

    def run(
        self,
        scope: Scope,
        thread_id: str,
        messages: Sequence[Message],
        signals: Signals,
        *,
        fenced: Callable[[], bool] | None = None,
        recorded_at: float | None = None,
        marks: Sequence[RecordMark] = (),
        erased: Callable[[], bool] | None = None,
        reprocess: bool = False,
    ) -> UpdateResult:
        """Extract from the messages the scope has not seen for this thread and commit
        (from all of them with ``reprocess=True``: the watermark is ignored, then moved).

        Turns recorded (``recorded_at``, ``marks``: see ``Job``) before the scope's last
        clear are forgotten: marked seen, never extracted. The result is discarded (and
        the turns marked seen) when the scope is cleared meanwhile: its ``generation``
        moved, or ``fenced()`` says so. It is discarded and nothing is written when the
        user was erased meanwhile: ``erased()`` says so, or the scope's revision went
        backwards (only ``forget_user`` does that).

        Raises:
            ExtractionError, ChatModelError: the extractor failed (the queue retries;
                chunks committed before the failure stay committed).
            ConflictError: commits kept racing for longer than ``conflict_timeout``.
            StorageError: the store failed; nothing was lost.
        """
        # security: nothing reaches the extractor or the store unredacted. Redaction is
        # idempotent, so messages a durable queue already redacted come out the same.
        messages = redact_messages(messages, self._redactor)
        document = self._store.load(scope)
        forgotten = recorded_before_clear(messages, recorded_at, marks, cleared_time(document))
        if forgotten:
            logger.info(
                "%d turn(s) of thread %s were recorded before %s was cleared: forgotten",
                forgotten, short_repr(thread_id), scope,
            )  # fmt: skip
            self.retry(
                scope, functools.partial(self.mark_seen, scope, thread_id, messages[:forgotten])
            )
            document = self._store.load(scope)
        start = len(messages) - len(
            watermark.new_messages(messages, document.watermarks.get(thread_id))
        )
        if reprocess:  # extract again from every turn not forgotten with a clear
            start = forgotten
        if not any(m.role == "user" for m in messages[start:]):
            return UpdateResult(
                scope, thread_id, document.revision, False,
                skipped="cleared before update" if forgotten else "nothing new",
            )  # fmt: skip
        total = UpdateResult(scope, thread_id, document.revision, False)
        generation = document.generation
        while start < len(messages):
            end = self._chunk_end(document, messages, start, signals, thread_id)
            decision = (
                None if self._gate is None else self._gate.decide(_chunk(messages, start, end))
            )
            if decision is not None and not decision.call:
                step = self._gated(scope, thread_id, messages[:end], erased, decision.reason)
            else:
                step = self._run_chunk(
                    scope=scope, thread_id=thread_id, messages=messages, span=(start, end),
                    signals=signals, document=document,
                    cleared=lambda current: current.generation != generation
                    or (fenced is not None and fenced()),
                    erased=erased,
                )  # fmt: skip
            total = _combine(total, step)
            if step.skipped in ("cleared during update", "user erased during update"):
                return total
            start = end
            if start < len(messages):
                document = self._store.load(scope)
        return total

    def _gated(
        self,
        scope: Scope,
        thread_id: str,
        messages: Sequence[Message],
        erased: Callable[[], bool] | None,
        reason: str,
    ) -> UpdateResult:
        """The gate found nothing to learn: move the watermark past ``messages``, no call."""
        if erased is not None and erased():
            return UpdateResult(scope, thread_id, 0, False, skipped="user erased during update")
        revision = self.retry(scope, functools.partial(self.mark_seen, scope, thread_id, messages))
        logger.debug("update for %s made no extraction call: %s", scope, reason)
        return UpdateResult(scope, thread_id, revision, False, skipped=f"{GATED}: {reason}")

    def _chunk_end(
        self,
        document: MemoryDocument,
        messages: Sequence[Message],
        start: int,
        signals: Signals,
        thread_id: str,
    ) -> int:
        """Where the chunk of new turns starting at ``start`` ends: all of them when the
        request fits ``max_input_tokens`` or cannot be measured; else as many whole
        exchanges as fit (at least one message). The plan sums per-message sizes; the
        chunk is then measured whole and shrunk if the sum was short."""
        extractor = self._extractor
        limit = self._max_input
        if limit is None or not isinstance(extractor, SizedExtractor):
            return len(messages)

        def size(end: int) -> int | None:
            request = ExtractionRequest(document, _chunk(messages, start, end), signals, thread_id)
            return extractor.request_tokens(request)

        used = size(start + 1)  # the fixed part and the first message
        if used is None:
            return len(messages)
        end = start + 1
        while end < len(messages):  # each message is counted once: linear in the thread
            used += extractor.message_tokens(messages[end])
            if used > limit:
                break
            end += 1
        if end == len(messages) and (size(end) or 0) <= limit:
            return end
        # end on a whole exchange (after the assistant's reply) when the chunk holds one
        cut = end
        while cut > start + 1 and not (
            messages[cut - 1].role == "assistant" and messages[cut - 2].role == "user"
        ):
            cut -= 1
        end = cut if cut > start + 1 else end
        while end > start + 1 and (size(end) or 0) > limit:  # the sum was a close estimate
            end -= 1
        if (size(end) or 0) > limit:
            logger.warning(
                "the extraction request for one message is over max_extraction_input_tokens=%d "
                "(the memory view alone is large); sending it anyway",
                limit,
            )
        return end

    def _run_chunk(
        self,
        *,
        scope: Scope,
        thread_id: str,
        messages: Sequence[Message],
        span: tuple[int, int],
        signals: Signals,
        document: MemoryDocument,
        cleared: Callable[[MemoryDocument], bool],
        erased: Callable[[], bool] | None,
    ) -> UpdateResult:
        """Extract ``messages[start:end]`` and commit it with the watermark after ``end``."""
        start, end = span
        new = _chunk(messages, start, end)
        request = ExtractionRequest(document, new, signals, thread_id)
        extraction = self._extractor.propose(request)
        fresh = [document]  # the first attempt reuses the document the extractor saw
        seen = messages[:end]

        def attempt() -> UpdateResult:
            current = fresh.pop() if fresh else self._store.load(scope)
            if current.revision < document.revision or (erased is not None and erased()):
                logger.info("update for %s discarded: the user was erased meanwhile", scope)
                return UpdateResult(
                    scope, thread_id, current.revision, False, usage=extraction.usage,
                    messages_sent=len(new), skipped="user erased during update", requests=1,
                )  # fmt: skip
            if cleared(current):
                logger.info("update for %s discarded: memory was cleared meanwhile", scope)
                revision = self.mark_seen(scope, thread_id, messages, current)
                return UpdateResult(
                    scope, thread_id, revision, False, usage=extraction.usage,
                    messages_sent=len(new), skipped="cleared during update", requests=1,
                )  # fmt: skip
            now = self._now()
            applied = apply(
                current,
                extraction.change_set,
                self.apply_context(
                    now, thread_id, signals, instructions=extraction.instructions, turns=new
                ),
            )
            log_dropped(scope, applied.changes)
            result_doc = watermark.advance(applied.document, thread_id, seen, iso(now))
            if not applied.changed and _same_watermark(current, result_doc, thread_id):
                return UpdateResult(
                    scope, thread_id, current.revision, False, applied.changes,
                    extraction.usage, len(new), skipped="no change", requests=1,
                )  # fmt: skip
            stored = self._commit(
                scope, result_doc, current.revision,
                applied.changes, thread_id=thread_id, turns=new, at=iso(now),
            )  # fmt: skip
            return UpdateResult(
                scope, thread_id, stored.revision, True, applied.changes,
                extraction.usage, len(new), requests=1,
            )  # fmt: skip

        return self.retry(scope, attempt)

    def _commit(
        self,
        scope: Scope,
        document: MemoryDocument,
        expected: int,
        changes: Sequence[Change],
        *,
        thread_id: str,
        turns: Sequence[Message],
        at: str,
    ) -> MemoryDocument:
        events = self.events(changes, thread_id, turns, at)
        return self.commit_events(scope, document, expected, events)

    def events(
        self, changes: Sequence[Change], thread_id: str, turns: Sequence[Message], at: str
    ) -> tuple[ChangeEvent, ...]:
        """The history events of ``changes`` learned from ``turns`` of ``thread_id``
        (none when history is not kept)."""
        if not self._history:
            return ()
        return _events.from_changes(
            changes, at=at, extractor=self._extractor.name, thread_id=thread_id,
            turns=turns, scrub=self._redactor,
        )  # fmt: skip

    def commit_events(
        self,
        scope: Scope,
        document: MemoryDocument,
        expected: int,
        events: Sequence[ChangeEvent],
    ) -> MemoryDocument:
        """Commit ``document`` (compare-and-set on ``expected``) with ``events``."""
        if not self._history:
            return self._store.commit(scope, document, expected_revision=expected)
        commit: Callable[..., MemoryDocument] = self._store.commit
        return commit(scope, document, expected_revision=expected, events=events)

    def mark_seen(
        self,
        scope: Scope,
        thread_id: str,
        messages: Sequence[Message],
        document: MemoryDocument | None = None,
    ) -> int:
        """Move the thread's watermark past ``messages`` (already redacted) without
        learning from them.

        Turns said before a ``clear`` are forgotten with it: without this, the thread's
        next update would send them again and re-learn what the user asked to forget.
        Returns the scope's revision afterwards.

        Raises:
            ConflictError: the commit raced (callers retry through :meth:`retry`).
        """
        current = self._store.load(scope) if document is None else document
        marked = watermark.advance(current, thread_id, messages, iso(self._now()))
        if _same_watermark(current, marked, thread_id):
            return current.revision
        return self._store.commit(scope, marked, expected_revision=current.revision).revision


def retry_on_conflict(
    attempt: Callable[[], _T], *, timeout: float = DEFAULT_CONFLICT_TIMEOUT_SECONDS
) -> _T:
    """Call ``attempt`` (load, change, commit) until its commit does not conflict.

    Racing writers wait a short random, growing time (capped at 50 ms) between tries so
    they spread out. A ``ConflictError`` comes out only after ``MAX_COMMIT_ATTEMPTS``
    tries *and* ``timeout`` seconds.

    Raises:
        ConflictError: the last conflict, once both budgets are spent.
    """
    deadline = time.monotonic() + timeout
    tries = 0
    while True:
        tries += 1
        try:
            return attempt()
        except ConflictError:
            if tries >= MAX_COMMIT_ATTEMPTS and time.monotonic() >= deadline:
                raise
            pause = min(
                _CONFLICT_BACKOFF_CAP_SECONDS, _CONFLICT_BACKOFF_SECONDS * 2 ** min(tries, 16)
            )
            time.sleep(random.uniform(0, pause))


def _combine(total: UpdateResult, step: UpdateResult) -> UpdateResult:
    """Two chunks' results as one update's."""
    return UpdateResult(
        total.scope,
        total.thread_id,
        step.revision,
        total.committed or step.committed,
        total.changes + step.changes,
        total.usage + step.usage,
        total.messages_sent + step.messages_sent,
        None if total.committed or step.committed else step.skipped,
        total.requests + step.requests,
    )


def _chunk(messages: Sequence[Message], start: int, end: int) -> tuple[Message, ...]:
    """``messages[start:end]``, plus the assistant answer just before them (so a correction
    in the first new turn can name what it corrects)."""
    if start > 0 and messages[start - 1].role == "assistant":
        return (messages[start - 1], *messages[start:end])
    return tuple(messages[start:end])


def log_dropped(scope: Scope, changes: Sequence[Change]) -> None:
    """One line for what apply declined, by reason (no content: it is the user's)."""
    reasons: dict[str, int] = {}
    for change in changes:
        if change.kind == "skipped" and not change.reason.startswith("duplicate of"):
            key = change.reason.split(":")[0]
            reasons[key] = reasons.get(key, 0) + 1
    if reasons:
        logger.info(
            "update for %s: %d proposed item(s) not applied: %s",
            scope,
            sum(reasons.values()),
            "; ".join(f"{reason} ({count})" for reason, count in reasons.items()),
        )


def _same_watermark(before: MemoryDocument, after: MemoryDocument, thread_id: str) -> bool:
    old = before.watermarks.get(thread_id)
    new = after.watermarks.get(thread_id)
    return old is not None and new is not None and old.message_key == new.message_key
