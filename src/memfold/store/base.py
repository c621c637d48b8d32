"""The storage protocol every backend implements (``json``, ``sqlite``, ``postgres``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from memfold.model import MemoryDocument, Scope

__all__ = ["MemoryStore"]


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
