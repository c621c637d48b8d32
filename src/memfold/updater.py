"""One update: load → watermark → extract → apply → commit, with CAS retries and the
clear fence. Used by ``Memory.update`` directly and by the queue's workers."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from memfold import _events, watermark
from memfold._facts import iso
from memfold.apply import ApplyContext, Change, apply
from memfold.errors import ConflictError
from memfold.extract.base import ExtractionRequest, Extractor, Usage
from memfold.model import MemoryDocument, Message, Scope, Signals
from memfold.redact import Redactor, redact_messages
from memfold.store.base import MemoryStore

__all__ = ["MAX_COMMIT_ATTEMPTS", "UpdateResult", "Updater", "retry_on_conflict"]

logger = logging.getLogger("memfold.update")

#: Re-apply a change set to a fresh document at most this often when commits race.
MAX_COMMIT_ATTEMPTS = 10
_CONFLICT_BACKOFF_SECONDS = 0.001

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
    """Runs single updates against a store with an extractor."""

    def __init__(
        self,
        store: MemoryStore,
        extractor: Extractor,
        *,
        max_facts: int,
        confidence_threshold: float,
        now: Callable[[], datetime],
        redactor: Redactor | None = None,
        record_history: bool = False,
    ) -> None:
        """``record_history``: pass change events to ``store.commit`` (a
        :class:`~memfold.store.base.HistoryStore`)."""
        self._store = store
        self._history = record_history
        self._redactor = redactor
        self._extractor = extractor
        self._max_facts = max_facts
        self._threshold = confidence_threshold
        self._now = now

    @property
    def extractor(self) -> Extractor:
        return self._extractor

    def run(
        self,
        scope: Scope,
        thread_id: str,
        messages: Sequence[Message],
        signals: Signals,
        *,
        fenced: Callable[[], bool] | None = None,
        erased: Callable[[], bool] | None = None,
    ) -> UpdateResult:
        """Extract from the messages the scope has not seen for this thread and commit.

        The result is discarded (and the turns marked seen) when the scope is cleared
        meanwhile: its ``generation`` moved, or ``fenced()`` says this job predates a
        clear that happened before the job could load the document. It is discarded and
        nothing is written when the user was erased meanwhile: ``erased()`` says so, or
        the scope's revision went backwards (only ``forget_user`` does that).

        Raises:
            ExtractionError, ChatModelError: the extractor failed (the queue retries).
            ConflictError: commits kept racing after ``MAX_COMMIT_ATTEMPTS`` re-applies.
            StorageError: the store failed; nothing was lost.
        """
        # security: nothing reaches the extractor or the store unredacted. Redaction is
        # idempotent, so messages a durable queue already redacted come out the same.
        messages = redact_messages(messages, self._redactor)
        document = self._store.load(scope)
        generation = document.generation
        new = _with_context(messages, document, thread_id)
        if not any(m.role == "user" for m in new):
            return UpdateResult(scope, thread_id, document.revision, False, skipped="nothing new")
        request = ExtractionRequest(document, new, signals, thread_id)
        extraction = self._extractor.propose(request)
        fresh = [document]  # the first attempt reuses the document the extractor saw

        def attempt() -> UpdateResult:
            current = fresh.pop() if fresh else self._store.load(scope)
            if current.revision < document.revision or (erased is not None and erased()):
                logger.info("update for %s discarded: the user was erased meanwhile", scope)
                return UpdateResult(
                    scope, thread_id, current.revision, False, usage=extraction.usage,
                    messages_sent=len(new), skipped="user erased during update",
                )  # fmt: skip
            if current.generation != generation or (fenced is not None and fenced()):
                logger.info("update for %s discarded: memory was cleared meanwhile", scope)
                revision = self.mark_seen(scope, thread_id, messages, current)
                return UpdateResult(
                    scope, thread_id, revision, False, usage=extraction.usage,
                    messages_sent=len(new), skipped="cleared during update",
                )  # fmt: skip
            now = self._now()
            applied = apply(
                current,
                extraction.change_set,
                ApplyContext(
                    now=now,
                    thread_id=thread_id,
                    signals=signals,
                    max_facts=self._max_facts,
                    confidence_threshold=self._threshold,
                    scrub=self._redactor,
                ),
            )
            result_doc = watermark.advance(applied.document, thread_id, messages, iso(now))
            if not applied.changed and _same_watermark(current, result_doc, thread_id):
                return UpdateResult(
                    scope, thread_id, current.revision, False, applied.changes,
                    extraction.usage, len(new), skipped="no change",
                )  # fmt: skip
            stored = self._commit(
                scope, result_doc, current.revision,
                applied.changes, thread_id=thread_id, turns=new, at=iso(now),
            )  # fmt: skip
            return UpdateResult(
                scope, thread_id, stored.revision, True, applied.changes,
                extraction.usage, len(new),
            )  # fmt: skip

        return retry_on_conflict(attempt)

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
        if not self._history:
            return self._store.commit(scope, document, expected_revision=expected)
        events = _events.from_changes(
            changes, at=at, extractor=self._extractor.name, thread_id=thread_id,
            turns=turns, scrub=self._redactor,
        )  # fmt: skip
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
            ConflictError: the commit raced (callers retry through ``retry_on_conflict``).
        """
        current = self._store.load(scope) if document is None else document
        marked = watermark.advance(current, thread_id, messages, iso(self._now()))
        if _same_watermark(current, marked, thread_id):
            return current.revision
        return self._store.commit(scope, marked, expected_revision=current.revision).revision


def retry_on_conflict(attempt: Callable[[], _T]) -> _T:
    """Call ``attempt`` (load, change, commit) until its commit does not conflict.

    Racing writers wait a short random, growing time between tries so they spread out.

    Raises:
        ConflictError: the last conflict, after ``MAX_COMMIT_ATTEMPTS`` tries.
    """
    for tries in range(1, MAX_COMMIT_ATTEMPTS + 1):
        try:
            return attempt()
        except ConflictError:
            if tries == MAX_COMMIT_ATTEMPTS:
                raise
            time.sleep(random.uniform(0, _CONFLICT_BACKOFF_SECONDS * 2**tries))
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def _same_watermark(before: MemoryDocument, after: MemoryDocument, thread_id: str) -> bool:
    old = before.watermarks.get(thread_id)
    new = after.watermarks.get(thread_id)
    return old is not None and new is not None and old.message_key == new.message_key


def _with_context(
    messages: Sequence[Message], document: MemoryDocument, thread_id: str
) -> tuple[Message, ...]:
    """The turns after the watermark, plus the assistant answer just before them (so a
    correction in the first new turn can name what it corrects)."""
    new = watermark.new_messages(messages, document.watermarks.get(thread_id))
    start = len(messages) - len(new)
    if 0 < start <= len(messages) and new and messages[start - 1].role == "assistant":
        return (messages[start - 1], *new)
    return tuple(new)
