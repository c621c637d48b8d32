"""The storage protocol every backend implements (``json``, ``sqlite``, ``postgres``).

:class:`MemoryStore` is what every store must do. :class:`HistoryStore` adds the change
history (events written in the same commit as the document) and erasure of a user; every
built-in store implements it, and ``Memory`` keeps no history with a store that does not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from memfold.history import ChangeEvent
from memfold.model import MemoryDocument, Scope

__all__ = [
    "DEFAULT_MAX_HISTORY_EVENTS",
    "HistoryStore",
    "MemoryStore",
    "check_history_limit",
    "check_max_history_events",
]

#: Change events kept per scope unless configured (``max_history_events``).
DEFAULT_MAX_HISTORY_EVENTS = 1000


@runtime_checkable
class MemoryStore(Protocol):
    """Durable per-scope documents with compare-and-set commits.

    Documents returned by ``load`` are immutable and may be shared from a cache.
    """

    def load(self, scope: Scope) -> MemoryDocument:
        """The scope's document; an empty one (revision 0) when nothing is stored.

        Raises:
            CorruptMemoryError: the stored data cannot be parsed (it is left untouched).
            StorageError: the store cannot be read.
        """
        ...

    def commit(
        self, scope: Scope, document: MemoryDocument, *, expected_revision: int
    ) -> MemoryDocument:
        """Store ``document`` if the stored revision is still ``expected_revision``.

        The stored document gets ``revision = expected_revision + 1`` and is returned; its
        ``generation`` is the stored one (only ``clear`` changes it).

        Raises:
            ConflictError: the stored revision differs (nothing was written).
            CorruptMemoryError: the stored data cannot be parsed (nothing was written).
            StorageError: the write failed; the previous version is intact.
        """
        ...

    def clear(self, scope: Scope) -> MemoryDocument:
        """Empty the scope and bump its ``generation`` (and revision); returns the result.

        Thread watermarks are kept, so messages seen before the clear are not re-learned.
        """
        ...

    def scopes(self) -> Iterator[Scope]:
        """Every scope that has a stored document."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class HistoryStore(MemoryStore, Protocol):
    """A store that keeps each scope's change history and can erase a user.

    ``commit`` and ``clear`` take ``events``: they are written in the same commit as the
    document (all or nothing), get the revision of that commit, and the oldest are
    dropped past the store's ``max_history_events`` (0 keeps none).
    """

    max_history_events: int

    def commit(
        self,
        scope: Scope,
        document: MemoryDocument,
        *,
        expected_revision: int,
        events: Sequence[ChangeEvent] = (),
    ) -> MemoryDocument: ...

    def clear(self, scope: Scope, *, events: Sequence[ChangeEvent] = ()) -> MemoryDocument: ...

    def history(self, scope: Scope, *, limit: int | None = None) -> list[ChangeEvent]:
        """The scope's events, newest first, at most ``limit`` (None: all that are kept).

        Raises:
            StorageError: the history cannot be read.
        """
        ...

    def forget_user(self, user_id: str | None) -> int:
        """Erase every scope of ``user_id`` (shared bucket and agents) with its history and
        watermarks, leaving nothing of it in the store; returns how many scopes held data.

        Raises:
            StorageError: the erasure failed (it can be retried).
        """
        ...


def check_max_history_events(value: object) -> int:
    """Raises ValueError unless ``value`` is a non-negative integer."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"max_history_events={value!r}: must be an integer of 0 or more")
    return value


def check_history_limit(limit: object, kept: int) -> int:
    """The number of events to return for ``limit`` (None: every kept one).

    Raises:
        ValueError: ``limit`` is not a positive integer or None.
    """
    if limit is None:
        return kept
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit={limit!r}: must be a positive integer or None")
    return min(limit, kept)


def check_commit_args(document: object, expected_revision: object) -> int:
    """The arguments every backend's ``commit`` validates, the same way.

    Raises:
        TypeError: ``document`` is not a ``MemoryDocument``.
        ValueError: ``expected_revision`` is not a non-negative integer.
    """
    if not isinstance(document, MemoryDocument):
        raise TypeError(f"document must be a MemoryDocument, got {type(document).__name__}")
    if (
        isinstance(expected_revision, bool)
        or not isinstance(expected_revision, int)
        or expected_revision < 0
    ):
        raise ValueError(
            f"expected_revision={expected_revision!r}: must be the non-negative revision "
            "of the document you loaded"
        )
    return expected_revision


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (only Python writes it)")


def loads_strict_json(raw: str | bytes) -> Any:
    """``json.loads`` that refuses ``NaN`` and ``Infinity``, which no commit could write
    back: a stored document holding them must fail to load, not later fail to save.

    Raises:
        ValueError: the text is not strict JSON (``json.JSONDecodeError`` included).
        RecursionError: it is nested too deeply.
    """
    return json.loads(raw, parse_constant=_reject_constant)
