"""``InMemoryStore``: the store contract without a disk, for tests and throwaway agents.

Same compare-and-set and generation semantics as the durable stores (the contract suite
runs over it too); state lives on the instance and is gone when it is.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator, Sequence

from memfold.errors import ConflictError
from memfold.history import ChangeEvent, stamp
from memfold.model import MemoryDocument, Scope
from memfold.store._ids import validate_id
from memfold.store.base import (
    DEFAULT_MAX_HISTORY_EVENTS,
    check_commit_args,
    check_history_limit,
    check_max_history_events,
    cleared,
    committed,
    encode_document,
)

__all__ = ["InMemoryStore"]

_EMPTY = MemoryDocument()


def _checked(scope: Scope) -> Scope:
    if not isinstance(scope, Scope):
        raise TypeError(f"scope must be a Scope, got {type(scope).__name__}")
    if scope.user_id is not None:
        validate_id(scope.user_id, "user_id")
    if scope.agent is not None:
        validate_id(scope.agent, "agent")
    return scope


class InMemoryStore:
    """A thread-safe :class:`~memfold.store.base.HistoryStore` held in dicts."""

    def __init__(self, *, max_history_events: int = DEFAULT_MAX_HISTORY_EVENTS) -> None:
        self.max_history_events = check_max_history_events(max_history_events)
        self._documents: dict[Scope, MemoryDocument] = {}
        self._history: dict[Scope, deque[ChangeEvent]] = {}
        self._lock = threading.Lock()

    def _record(self, scope: Scope, events: Sequence[ChangeEvent], revision: int) -> None:
        if events and self.max_history_events:
            kept = self._history.setdefault(scope, deque(maxlen=self.max_history_events))
            kept.extend(stamp(events, revision))

    def load(self, scope: Scope) -> MemoryDocument:
        """The scope's document, or an empty one (revision 0).

        Raises:
            TypeError, ValueError: an id is not a non-empty string without NUL.
        """
        with self._lock:
            return self._documents.get(_checked(scope), _EMPTY)

    def commit(
        self,
        scope: Scope,
        document: MemoryDocument,
        *,
        expected_revision: int,
        events: Sequence[ChangeEvent] = (),
    ) -> MemoryDocument:
        """Store ``document`` as revision ``expected_revision + 1`` with the stored generation,
        and ``events`` in the scope's history.

        Raises:
            ConflictError: the stored revision differs; nothing was stored.
            InvalidDocumentError: the document would not load back; nothing was stored.
            TypeError, ValueError: bad arguments or ids.
        """
        check_commit_args(document, expected_revision)
        encode_document(scope, document)  # refuse what a durable store could not load back
        with self._lock:
            current = self._documents.get(_checked(scope), _EMPTY)
            if current.revision != expected_revision:
                raise ConflictError(scope, expected=expected_revision, actual=current.revision)
            stored = committed(document, current, expected_revision)
            self._documents[scope] = stored
            self._record(scope, events, stored.revision)
            return stored

    def clear(
        self, scope: Scope, *, cleared_at: str = "", events: Sequence[ChangeEvent] = ()
    ) -> MemoryDocument:
        """Replace the scope's memory with an empty document, bumping generation and revision."""
        with self._lock:
            current = self._documents.get(_checked(scope), _EMPTY)
            stored = cleared(current, cleared_at)
            self._documents[scope] = stored
            self._record(scope, events, stored.revision)
            return stored

    def history(self, scope: Scope, *, limit: int | None = None) -> list[ChangeEvent]:
        """The scope's events, newest first.

        Raises:
            ValueError: ``limit`` is not a positive integer or None.
        """
        with self._lock:
            kept = list(self._history.get(_checked(scope), ()))
        count = check_history_limit(limit, len(kept))
        return kept[::-1][:count]

    def forget_user(self, user_id: str | None) -> int:
        """Drop every scope of ``user_id`` with its history; returns how many there were."""
        if user_id is not None:
            validate_id(user_id, "user_id")
        with self._lock:
            scopes = [s for s in self._documents if s.user_id == user_id]
            for scope in scopes:
                del self._documents[scope]
            for scope in [s for s in self._history if s.user_id == user_id]:
                del self._history[scope]
        return len(scopes)

    def scopes(self) -> Iterator[Scope]:
        """Every scope that has been committed or cleared (a snapshot)."""
        with self._lock:
            found = list(self._documents)
        return iter(found)

    def close(self) -> None:
        """Nothing to release; the data stays readable. Calling this twice is fine."""
