"""The memfold exception hierarchy.

Every error a caller can see derives from :class:`MemfoldError`. Each subclass keeps the
offending values as attributes, and its message says what was wrong and how to fix it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memfold.extract.base import Usage

__all__ = [
    "ConfigError",
    "ConflictError",
    "CorpusError",
    "CorruptMemoryError",
    "DuplicateFactError",
    "ExtractionError",
    "FactNotFoundError",
    "InvalidDocumentError",
    "MemfoldError",
    "StorageError",
]


class MemfoldError(Exception):
    """Base class of every memfold error."""


class ConfigError(MemfoldError, ValueError):
    """A configuration value is missing, out of range, or names something unavailable."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class StorageError(MemfoldError):
    """The store could not read or write; the previously stored memory is intact."""


class ConflictError(StorageError):
    """A commit's expected revision is stale: someone else committed first.

    Reload the memory and apply the change again (``Memory`` does this for you).
    """

    def __init__(self, scope: object, *, expected: int, actual: int) -> None:
        super().__init__(
            f"conflict on {scope}: expected revision {expected}, stored revision is {actual}; "
            "reload and re-apply the change"
        )
        self.scope = scope
        self.expected = expected
        self.actual = actual


class InvalidDocumentError(StorageError, ValueError):
    """A document given to ``commit`` would not load back (a field of the wrong type, a
    value JSON cannot hold); nothing was written, so no input can make a scope unreadable.
    Retrying the same document cannot help."""

    retryable = False

    def __init__(self, scope: object, reason: str) -> None:
        super().__init__(
            f"cannot store the memory of {scope}: {reason}; nothing was written. "
            "Fix the value (ids and fact fields are strings, numbers are finite)"
        )
        self.scope = scope
        self.reason = reason


class CorruptMemoryError(StorageError):
    """A stored memory could not be parsed. The file is left untouched for inspection.

    Retrying cannot help until a person repairs or moves the data (``retryable``)."""

    retryable = False

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"corrupt memory file {path}: {reason}. memfold will not overwrite it; "
            "repair or move it away, then retry"
        )
        self.path = path
        self.reason = reason


class ExtractionError(MemfoldError):
    """An extractor's reply could not be used; the update is retried by the queue.

    ``usage`` is what the unusable reply cost, when known (it is still counted).
    """

    MAX_RAW_CHARS = 2000

    def __init__(self, message: str, *, raw: str | None = None, usage: Usage | None = None) -> None:
        if raw is not None and len(raw) > self.MAX_RAW_CHARS:
            raw = raw[: self.MAX_RAW_CHARS] + f"... [{len(raw) - self.MAX_RAW_CHARS} chars cut]"
        super().__init__(message)
        self.raw = raw
        self.usage = usage


class FactNotFoundError(MemfoldError, KeyError):
    """No fact with this id exists in the given scope."""

    def __init__(self, fact_id: str, scope: object) -> None:
        super().__init__(f"no fact {fact_id!r} in {scope}; list facts with `memfold facts list`")
        self.fact_id = fact_id
        self.scope = scope

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class DuplicateFactError(MemfoldError, ValueError):
    """A fact with the same content already exists in the scope."""

    def __init__(self, content: str, existing_id: str, scope: object = None) -> None:
        where = "" if scope is None else f" in {scope}"
        super().__init__(
            f"a fact with the same content already exists{where}: {existing_id} "
            f"({content!r}); edit or delete {existing_id} instead, or word the fact differently"
        )
        self.content = content
        self.existing_id = existing_id
        self.scope = scope


class CorpusError(MemfoldError, ValueError):
    """A labelled evaluation corpus cannot be read; the message names the line and the fix."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        where = path if line is None else f"{path}, line {line}"
        super().__init__(f"corpus {where}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem
