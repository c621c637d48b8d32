"""The storage protocol every backend implements (``json``, ``sqlite``, ``postgres``).

:class:`MemoryStore` is what every store must do. :class:`HistoryStore` adds the change
history (events written in the same commit as the document) and erasure of a user; every
built-in store implements it, and ``Memory`` keeps no history with a store that does not.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic_core import from_json

from memfold.errors import InvalidDocumentError, StorageError
from memfold.history import ChangeEvent
from memfold.model import (
    DocumentError,
    MemoryDocument,
    Scope,
    check_document,
    document_to_dict,
)

__all__ = [
    "DEFAULT_MAX_HISTORY_EVENTS",
    "HistoryStore",
    "MemoryStore",
    "check_commit_args",
    "check_history_limit",
    "check_max_history_events",
    "cleared",
    "committed",
    "encode_document",
    "loads_strict_json",
    "not_a_regular_file",
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
            InvalidDocumentError: ``document`` would not load back; nothing was written.
            CorruptMemoryError: the stored data cannot be parsed (nothing was written).
            StorageError: the write failed; the previous version is intact.
        """
        ...

    def clear(self, scope: Scope, *, cleared_at: str = "") -> MemoryDocument:
        """Empty the scope and bump its ``generation`` (and revision); returns the result.

        Thread watermarks are kept, so messages seen before the clear are not re-learned.
        ``cleared_at`` (ISO-8601 UTC) becomes the document's ``cleared_at``: updates of
        turns recorded before it learn nothing, in any process (see :func:`cleared`).
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

    def clear(
        self, scope: Scope, *, cleared_at: str = "", events: Sequence[ChangeEvent] = ()
    ) -> MemoryDocument: ...

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


def committed(
    document: MemoryDocument, current: MemoryDocument, expected_revision: int
) -> MemoryDocument:
    """What a successful ``commit`` stores: the next revision, the stored generation (only
    ``clear`` changes it) and the later of the two clear times (a commit never undoes a
    clear's fence; an import may set a later one)."""
    return document.with_changes(
        revision=expected_revision + 1,
        generation=current.generation,
        cleared_at=max(current.cleared_at, document.cleared_at),
    )


def cleared(current: MemoryDocument, cleared_at: str) -> MemoryDocument:
    """What ``clear`` stores in place of ``current``: nothing but the bumped revision and
    generation, the watermarks (turns seen before the clear stay seen) and the clear time."""
    return MemoryDocument(
        revision=current.revision + 1,
        generation=current.generation + 1,
        watermarks=current.watermarks,
        cleared_at=max(current.cleared_at, cleared_at),
    )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (only Python writes it)")


def loads_strict_json(raw: str | bytes) -> Any:
    """``json.loads`` that refuses ``NaN`` and ``Infinity``, which no commit could write
    back: a stored document holding them must fail to load, not later fail to save.

    Well-formed JSON goes through pydantic-core's parser (a dependency already; about a
    third faster than the standard library on a large document, which is most of a cold
    load). Whatever it refuses (a lone-surrogate escape, nesting past its limit, a byte
    order mark, broken text) is parsed again by ``json.loads``, so exactly what
    ``json.loads`` accepts loads, and errors read as its errors. Only keys are cached by
    the fast parser, never values (no fact text outlives an erasure in its cache).

    Raises:
        ValueError: the text is not strict JSON (``json.JSONDecodeError`` included).
        RecursionError: it is nested too deeply.
    """
    try:
        return from_json(raw, allow_inf_nan=False, cache_strings="keys")
    except ValueError:
        return json.loads(raw, parse_constant=_reject_constant)


def encode_document(scope: Scope, document: MemoryDocument) -> str:
    """``document`` as the compact JSON text every store writes, checked to load back.

    A store writes only what its ``load`` can read again: a document that would not (a
    fact ``source`` that is not a string, NaN, a value nested too deeply) is refused here,
    before anything is written, instead of making the scope unreadable afterwards.

    Raises:
        InvalidDocumentError: naming the field that would not load back.
    """
    try:
        check_document(document)  # the loader's rules, without a JSON round trip
        text = json.dumps(
            document_to_dict(document),
            ensure_ascii=False,
            separators=(",", ":"),
            allow_nan=False,
        )
        text.encode("utf-8")  # lone surrogates cannot be written to a file or a row
    except DocumentError as exc:
        raise InvalidDocumentError(scope, str(exc)) from exc
    except (TypeError, ValueError) as exc:  # not JSON: sets, objects, NaN, bad Unicode
        raise InvalidDocumentError(scope, f"not storable as JSON ({exc})") from exc
    except RecursionError as exc:
        raise InvalidDocumentError(scope, "a value is nested too deeply") from exc
    return text


def not_a_regular_file(path: object, mode: int, what: str) -> StorageError:
    """The error for a memory path that holds a FIFO, a directory or a device: reading it
    could block forever (a FIFO) or fail obscurely, so it is refused by name."""
    if stat.S_ISFIFO(mode):
        kind = "a FIFO"
    elif stat.S_ISDIR(mode):
        kind = "a directory"
    else:
        kind = "a special file"
    return StorageError(
        f"{what} {path} is {kind}, not a regular file; memfold reads memory only from "
        "regular files: move it away, then retry"
    )
