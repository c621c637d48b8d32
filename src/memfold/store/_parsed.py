"""Reuse of parsed documents for the SQL stores.

A SQL store reads a scope's row on every load (so it always sees other processes'
commits), but parsing a large document costs far more than reading it: about 10 ms for
1,000 facts against 0.3 ms for the read. ``ParsedRows`` keeps the document last parsed
for each scope with the key of the row it came from, and hands it out again only while
the stored row has the same key: on SQLite the revision, the generation and every
character of the text; on PostgreSQL, where sending the text costs more than the check,
the revision, the generation, the microsecond ``updated_at`` of the commit and the row
version's ``xmin`` (new with every UPDATE, an operator's of the document alone too). Either
way it never serves a document that changed or vanished (DESIGN.md rule 10).

A store that can tell cheaply that *nothing at all* changed in the database since a
moment (SQLite's ``PRAGMA data_version``) also records that moment's token with each
entry: while the database's token is still the same, :meth:`ParsedRows.fresh` returns the
document without reading the row.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from memfold.model import MemoryDocument, Scope

__all__ = ["ParsedRows"]


class ParsedRows:
    """A bounded, thread-safe LRU of (row → parsed document) per scope."""

    def __init__(self, max_scopes: int = 256, max_chars: int = 32_000_000) -> None:
        self.max_scopes = max_scopes
        self.max_chars = max_chars
        self._rows: OrderedDict[Scope, tuple[tuple[Any, ...], MemoryDocument, int]] = OrderedDict()
        self._fresh: dict[Scope, object] = {}  # scope → database token it was checked at
        self._chars = 0
        self._lock = threading.Lock()

    def fresh(self, scope: Scope, token: object) -> MemoryDocument | None:
        """The document of ``scope`` if it was checked against the database when the
        database's change token was ``token`` (nothing changed since), else None."""
        with self._lock:
            found = self._rows.get(scope)
            if found is None or self._fresh.get(scope) != token:
                return None
            self._rows.move_to_end(scope)
            return found[1]

    def get(
        self, scope: Scope, key: tuple[Any, ...], token: object = None
    ) -> MemoryDocument | None:
        """The document parsed from the row of ``scope`` with this ``key``, or None.
        ``token``: the database's change token read before the row (see :meth:`fresh`)."""
        with self._lock:
            found = self._rows.get(scope)
            if found is None or found[0] != key:
                return None
            self._rows.move_to_end(scope)
            self._mark(scope, token)
            return found[1]

    def put(
        self,
        scope: Scope,
        key: tuple[Any, ...],
        document: MemoryDocument,
        size: int,
        token: object = None,
    ) -> None:
        """Remember ``document`` (parsed from ``size`` characters) under ``key``."""
        with self._lock:
            old = self._rows.pop(scope, None)
            self._fresh.pop(scope, None)
            if old is not None:
                self._chars -= old[2]
            if size > self.max_chars:
                return
            self._rows[scope] = (key, document, size)
            self._mark(scope, token)
            self._chars += size
            while len(self._rows) > self.max_scopes or self._chars > self.max_chars:
                gone, (_, _, dropped) = self._rows.popitem(last=False)
                self._fresh.pop(gone, None)
                self._chars -= dropped

    def forget(self, scope: Scope) -> None:
        """Drop what is known of ``scope`` (its row is gone)."""
        with self._lock:
            old = self._rows.pop(scope, None)
            self._fresh.pop(scope, None)
            if old is not None:
                self._chars -= old[2]

    def _mark(self, scope: Scope, token: object) -> None:
        if token is None:
            self._fresh.pop(scope, None)
        else:
            self._fresh[scope] = token

    def drop_user(self, user_id: str | None) -> None:
        """Forget the documents of every scope of ``user_id`` (an erased user)."""
        with self._lock:
            for scope in [s for s in self._rows if s.user_id == user_id]:
                self._chars -= self._rows.pop(scope)[2]
                self._fresh.pop(scope, None)

    def __contains__(self, scope: object) -> bool:
        with self._lock:
            return scope in self._rows

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)
