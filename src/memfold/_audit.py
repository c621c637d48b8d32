"""The reading and erasing half of the ``Memory`` facade: history, provenance, the
injection report, summary edits, listing users and scopes, and erasing a user.

A mixin of :class:`memfold.memory.Memory`, kept apart so each file stays one concern;
the rules it relies on live in ``history``, ``edits``, ``inject`` and the stores.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from types import EllipsisType
from typing import Any, TypeVar

from memfold import _events, edits
from memfold.config import MemoryConfig
from memfold.context_report import ContextReport, report
from memfold.errors import FactNotFoundError, MemfoldError
from memfold.history import ChangeEvent, FactProvenance, events_for_fact, provenance
from memfold.inject import ContextRenderer
from memfold.model import MemoryDocument, Scope, Summary, checked_scope
from memfold.queue.base import JobKey, UpdateQueue
from memfold.redact import Redactor, cached_scrub, redact_fact
from memfold.search import Searcher
from memfold.store.base import HistoryStore, MemoryStore, check_history_limit

__all__ = ["AuditMixin", "Describe", "ErasureReport"]

logger = logging.getLogger("memfold")

_T = TypeVar("_T")
#: (document before, document after, time) → the change events of a commit.
Describe = Callable[[MemoryDocument, MemoryDocument, str], tuple[ChangeEvent, ...]]


@dataclass(frozen=True, slots=True)
class ErasureReport:
    """What ``forget_user`` erased: scopes that held memory, queued updates dropped."""

    user_id: str | None
    scopes: int
    queued_updates: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "userId": self.user_id,
            "scopes": self.scopes,
            "queuedUpdates": self.queued_updates,
        }


def _scope_order(scope: Scope) -> tuple[bool, str, bool, str]:
    return (
        scope.user_id is not None,
        scope.user_id or "",
        scope.agent is not None,
        scope.agent or "",
    )


class AuditMixin:
    """History, provenance, reports and erasure for ``Memory`` (see the module doc)."""

    config: MemoryConfig
    _store: MemoryStore
    _searcher: Searcher
    _redactor: Redactor | None
    _queue: UpdateQueue | None
    _lock: threading.Lock
    _now: Callable[[], datetime]
    #: (key, first-record time) of running jobs whose user was erased
    _erased: set[tuple[JobKey, float]]
    #: how often ``forget_user`` erased each user in this process
    _erasure_counts: dict[str | None, int]

    def _edit(
        self,
        scope: Scope,
        change: Callable[[MemoryDocument], tuple[MemoryDocument, _T]],
        *,
        describe: Describe | None = None,
    ) -> _T:
        raise NotImplementedError  # pragma: no cover - Memory implements it

    def _get_queue(self) -> UpdateQueue:
        raise NotImplementedError  # pragma: no cover - Memory implements it

    @property
    def _renderer(self) -> ContextRenderer:  # built on first use by Memory
        raise NotImplementedError  # pragma: no cover - Memory implements it

    def _injection_inputs(
        self,
        scope: Scope,
        today: date | None,
        query: str | None,
        *,
        include_shared: bool | None = None,
    ) -> tuple[MemoryDocument, date | None, tuple[str, ...]]:
        raise NotImplementedError  # pragma: no cover - Memory implements it

    def _manual(self, gone: tuple[Any, str] = ("removed", "deleted by hand")) -> Describe:
        """How a person's edit is described in the history (see ``_events.from_diff``)."""

        def describe(
            before: MemoryDocument, after: MemoryDocument, at: str
        ) -> tuple[ChangeEvent, ...]:
            return _events.from_diff(
                before, after, at=at, actor="manual", gone=gone, scrub=self._redactor
            )

        return describe

    def _imported(
        self, before: MemoryDocument, after: MemoryDocument, at: str
    ) -> tuple[ChangeEvent, ...]:
        return _events.imported(before, after, at=at, scrub=self._redactor)

    def _history_store(self) -> HistoryStore | None:
        """The store, when it keeps history and history is on."""
        if self.config.max_history_events > 0 and isinstance(self._store, HistoryStore):
            return self._store
        return None

    # --- history and provenance -------------------------------------------------------

    def history(
        self,
        *,
        user_id: str | None = None,
        agent: str | None = None,
        fact_id: str | None = None,
        limit: int | None = 100,
    ) -> list[ChangeEvent]:
        """The scope's change events, newest first: all of them, or those of one fact
        (its own and those linking to it), at most ``limit`` (None: all kept).

        Raises:
            ValueError: ``limit`` is not a positive integer or None.
            StorageError: the history cannot be read.
        """
        check_history_limit(limit, 1)
        store = self._history_store()
        if store is None:
            return []
        scope = checked_scope(user_id, agent)
        if fact_id is None:
            found = store.history(scope, limit=limit)
        else:
            found = events_for_fact(store.history(scope), fact_id)
            found = found if limit is None else found[:limit]
        return self._at_recall(found)

    def _at_recall(self, events: list[ChangeEvent]) -> list[ChangeEvent]:
        """security: events written before a pattern existed are redacted when read."""
        scrub = self._recall_scrub
        if scrub is None:
            return events
        return [_events.at_recall(event, scrub) for event in events]

    @functools.cached_property
    def _recall_scrub(self) -> Callable[[str], str] | None:
        """The redactor, memoised per text (events repeat the same contents)."""
        return None if self._redactor is None else cached_scrub(self._redactor)

    def explain(
        self, fact_id: str, /, *, user_id: str | None = None, agent: str | None = None
    ) -> FactProvenance:
        """Where a fact came from (thread, the user's words, extractor, time), every later
        change, what it superseded and what superseded it. Works for facts that are gone,
        as long as the history still holds them.

        Raises:
            FactNotFoundError: neither the memory nor its history knows ``fact_id``.
            StorageError: the store cannot be read.
        """
        scope = checked_scope(user_id, agent)
        fact = self._store.load(scope).fact(fact_id)
        if fact is not None:
            fact = redact_fact(fact, self._redactor)  # security: redact at recall
        store = self._history_store()
        events = [] if store is None else self._at_recall(store.history(scope))
        found = provenance(fact_id, events[::-1], fact)
        if found is None:
            raise FactNotFoundError(fact_id, scope)
        return found

    # --- what is injected ------------------------------------------------------------

    def explain_context(
        self,
        *,
        user_id: str | None = None,
        agent: str | None = None,
        max_tokens: int | None = None,
        today: date | None = None,
        query: str | None = None,
    ) -> ContextReport:
        """The exact block ``context()`` returns with these arguments, its token count and
        budget, and for every fact and summary section whether it was included or
        dropped and why (see ``memfold.context_report.REASONS``).

        Raises:
            ValueError: ``max_tokens`` is negative.
            TypeError: ``query`` is neither a string nor None.
            StorageError: the store cannot be read.
        """
        scope = checked_scope(user_id, agent)
        document, today, relevance = self._injection_inputs(scope, today, query)
        plan = self._renderer.explain(
            document, max_tokens=max_tokens, today=today, relevance=relevance
        )
        return report(plan, scope)

    # --- summaries ----------------------------------------------------------------------

    def set_summary(
        self,
        section: str,
        text: str,
        /,
        *,
        user_id: str | None = None,
        agent: str | None = None,
    ) -> Summary:
        """Replace one summary section's text by hand ("" empties it); a section held out
        after a removal is injected again. ``section`` is a stored name
        (``personalContext``) or a short one (``personal``, see ``edits.SECTION_ALIASES``).

        Raises:
            ValueError: an unknown section or text that is not a string.
        """
        scope = checked_scope(user_id, agent)
        name = edits.section_name(section)
        clean = (
            self._redactor(text) if self._redactor is not None and isinstance(text, str) else text
        )

        def change(doc: MemoryDocument) -> tuple[MemoryDocument, Summary]:
            new_doc = edits.set_summary(doc, name, clean, now=self._now())
            return new_doc, new_doc.summaries.get(name, Summary())

        def describe(
            before: MemoryDocument, after: MemoryDocument, at: str
        ) -> tuple[ChangeEvent, ...]:
            return _events.from_diff(
                before, after, at=at, actor="manual", summary_reason="edited by hand",
                scrub=self._redactor,
            )  # fmt: skip

        return self._edit(scope, change, describe=describe)

    # --- users and scopes ---------------------------------------------------------------

    def scopes(self, user_id: str | EllipsisType | None = ...) -> list[Scope]:
        """Every scope with stored memory, or only ``user_id``'s (``None``: the default
        user's); sorted, the default user and each user's shared bucket first.

        Raises:
            StorageError: the store cannot be listed.
        """
        found = list(self._store.scopes())
        if user_id is not ...:
            found = [s for s in found if s.user_id == user_id]
        return sorted(set(found), key=_scope_order)

    def users(self) -> list[str | None]:
        """Every user id with stored memory, sorted; the default user is ``None`` (first).

        Raises:
            StorageError: the store cannot be listed.
        """
        return list(dict.fromkeys(scope.user_id for scope in self.scopes()))

    # --- erasure ------------------------------------------------------------------------

    def erasures(self, user_id: str | None) -> int:
        """How often ``forget_user`` erased ``user_id`` through this ``Memory``: a cache of
        blocks (the LangChain middleware's per-thread blocks) drops what it froze before."""
        with self._lock:
            return self._erasure_counts.get(user_id, 0)

    def _count_erasure(self, user_id: str | None) -> None:
        with self._lock:
            self._erasure_counts[user_id] = self._erasure_counts.get(user_id, 0) + 1

    def forget_user(self, user_id: str | None, /) -> ErasureReport:
        """Erase everything of one user: every scope (shared bucket and every agent) with
        its facts, summaries, watermarks and history, the user's queued updates on the
        queue (a durable queue's rows included), and cached blocks. An update already
        running for the user is discarded without writing anything.

        Afterwards nothing of the user is in the store. If your application records the
        same conversations again, memfold learns them again: delete them there too.

        Raises:
            MemfoldError: the store or queue cannot erase (a custom one without
                ``forget_user``).
            StorageError: the store or queue failed; retry (erasure is idempotent).
        """
        checked_scope(user_id, None)
        if not isinstance(self._store, HistoryStore):
            raise MemfoldError(
                f"the store {type(self._store).__name__} cannot erase a user: it has no "
                "forget_user(user_id) method (see memfold.store.base.HistoryStore)"
            )
        # a durable queue holds rows of the user even when this process never queued any
        queue = self._queue if self.config.queue == "memory" else self._get_queue()
        dropped = 0
        if queue is not None:
            erase = getattr(queue, "forget_user", None)
            if erase is None:
                raise MemfoldError(
                    f"the queue {type(queue).__name__} cannot drop a user's queued updates: "
                    "it has no forget_user(user_id) method"
                )
            running = getattr(queue, "running_jobs_of", None)
            if running is not None:
                with self._lock:
                    self._erased.update((job.key, job.enqueued_at) for job in running(user_id))
            dropped = int(erase(user_id))
        held = self.scopes(user_id)
        self._count_erasure(user_id)  # blocks frozen before this are stale ...
        count = self._store.forget_user(user_id)
        self._count_erasure(user_id)  # ... and so are blocks read while it ran
        self._renderer.forget_user(user_id)
        for scope in held:
            self._searcher.forget(scope)  # its index and embedding vectors
        logger.info(
            "memfold erased %s: %d scope(s), %d queued update(s)",
            Scope(user_id),
            count,
            dropped,
        )
        return ErasureReport(user_id, count, dropped)
