"""Shared mechanics of the SQL stores: schema versioning, compare-and-set, clear.

One row per scope in ``memfold_documents``::

    user_key, agent_key   the primary key: '' for None (ids are never empty), else the id;
                          on dialects with ``key_limit_bytes``, an id longer than that or
                          starting with ``HASHED_KEY_MARK`` is keyed by the mark plus its
                          SHA-256 in hex (a raw key never starts with the mark)
    user_id, agent        the exact ids (NULL for None), for people reading the table
    revision, generation  authoritative; they override the copies inside ``document``
    document              ``document_to_dict`` as JSON text, byte for byte what was written
    updated_at            when the row last changed (the database's clock)

``document`` is text, not JSONB, so a row is read back exactly as written and a damaged
row can be shown to a person as it is. Every write reads the stored row first, inside a
write transaction that holds the row (``BEGIN IMMEDIATE`` on SQLite, ``FOR UPDATE`` on
PostgreSQL): a row that does not parse is never overwritten.

Change events go to ``memfold_history`` (``id`` ascending in commit order, the scope's
keys, ``revision``, ``event`` as JSON text, ``created_at``) in the same transaction as the
document; the oldest rows of a scope past ``max_history_events`` are deleted in it too.

The schema version lives in ``memfold_schema`` (``component``, ``version``) under the
component ``store``; opening runs the missing migrations and refuses a database written
by a newer memfold. Dialects (:mod:`memfold.store.sqlite`, :mod:`memfold.store.postgres`)
supply connections, transactions, the placeholder and the DDL.
"""

# Table names in SQL text are module constants; every value is a bound parameter.
# ruff: noqa: S608

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

from memfold.errors import ConflictError, CorruptMemoryError, StorageError
from memfold.history import ChangeEvent, stamp
from memfold.model import DocumentError, MemoryDocument, Scope, document_from_dict
from memfold.store._ids import validate_id
from memfold.store._parsed import ParsedRows
from memfold.store.base import (
    DEFAULT_MAX_HISTORY_EVENTS,
    check_commit_args,
    check_history_limit,
    cleared,
    committed,
    encode_document,
    loads_strict_json,
)

__all__ = [
    "DOCUMENTS_TABLE",
    "HASHED_KEY_MARK",
    "HISTORY_TABLE",
    "SCHEMA_COMPONENT",
    "SCHEMA_TABLE",
    "BaseSqlStore",
    "CorruptRowError",
    "SchemaTooNewError",
]

log = logging.getLogger("memfold.store")

DOCUMENTS_TABLE = "memfold_documents"
HISTORY_TABLE = "memfold_history"
SCHEMA_TABLE = "memfold_schema"
SCHEMA_COMPONENT = "store"
#: First character of a hashed key column value (see the module doc).
HASHED_KEY_MARK = "\x01"
_EMPTY = MemoryDocument()
_WHERE_SCOPE = "WHERE user_key = ? AND agent_key = ?"


class CorruptRowError(CorruptMemoryError):
    """A stored row does not hold a valid memory document; it is left untouched."""

    def __init__(self, where: str, reason: str) -> None:
        StorageError.__init__(
            self,
            f"corrupt memory row {where}: {reason}. memfold will not overwrite it; "
            "repair the row's document column or delete the row, then retry",
        )
        self.path = where
        self.reason = reason


class SchemaTooNewError(StorageError):
    """The database was migrated by a newer memfold than this one."""

    def __init__(self, location: str, found: int, known: int) -> None:
        super().__init__(
            f"{location}: schema version {found} of {SCHEMA_TABLE} ({SCHEMA_COMPONENT}) is "
            f"newer than this memfold knows ({known}); upgrade memfold to open it"
        )
        self.found = found
        self.known = known


class BaseSqlStore:
    """A :class:`~memfold.store.base.MemoryStore` over one SQL table; see the module doc.

    Subclasses set the class attributes and implement the four hooks below.
    """

    #: How the driver writes a query parameter (SQL here is written with ``?``).
    placeholder: ClassVar[str] = "?"
    #: Appended to the SELECT of a write, to hold the row until the transaction ends.
    lock_suffix: ClassVar[str] = ""
    #: SQL expression of the current time for ``updated_at``.
    now_sql: ClassVar[str] = "CURRENT_TIMESTAMP"
    #: ``migrations[v]`` turns schema version ``v`` into ``v + 1``.
    migrations: ClassVar[tuple[tuple[str, ...], ...]] = ()
    #: Longest id (UTF-8 bytes) used as a key column value as it is; None: no limit.
    key_limit_bytes: ClassVar[int | None] = None
    #: Load by a first query of (revision, generation, ``stamp_columns``) and reuse the
    #: parsed document while they match (PostgreSQL, where sending a large document costs
    #: more than the extra query); else compare the whole text.
    stamp_loads: ClassVar[bool] = False
    #: What else tells a row's versions apart in that query: ``updated_at`` (microseconds
    #: on PostgreSQL) and, where the dialect has one, a row-version column that every
    #: write changes, an operator's ``UPDATE`` of the document alone included.
    stamp_columns: ClassVar[str] = "updated_at"
    #: Low-level errors to translate into :class:`StorageError`.
    driver_errors: ClassVar[tuple[type[BaseException], ...]] = ()

    #: Where the data lives, for messages (a file path, a DSN without password).
    location: str = "?"
    #: Change events kept per scope (0 keeps none); subclasses take it as an argument.
    max_history_events: int = DEFAULT_MAX_HISTORY_EVENTS

    # --- dialect hooks ----------------------------------------------------------------

    def _connection(self) -> AbstractContextManager[Any]:
        """A connection in autocommit mode, for the duration of the ``with``."""
        raise NotImplementedError

    def _write_transaction(self, conn: Any) -> AbstractContextManager[None]:
        """A transaction that commits on success and rolls back on an exception."""
        raise NotImplementedError

    def _lock_schema(self, conn: Any) -> None:
        """Serialise migrations between processes (inside the write transaction)."""

    def _after_erase(self, conn: Any) -> None:
        """Make erased rows unrecoverable from the database's files where the dialect can
        (outside any transaction)."""

    def close(self) -> None:
        raise NotImplementedError

    # --- helpers ----------------------------------------------------------------------

    @classmethod
    def schema_version(cls) -> int:
        """The schema version this code writes."""
        return len(cls.migrations)

    def _q(self, sql: str) -> str:
        return sql if self.placeholder == "?" else sql.replace("?", self.placeholder)

    def _key(self, value: str, what: str) -> str:
        validate_id(value, what)
        limit = self.key_limit_bytes
        if limit is None or (
            not value.startswith(HASHED_KEY_MARK) and len(value.encode("utf-8")) <= limit
        ):
            return value
        return HASHED_KEY_MARK + hashlib.sha256(value.encode("utf-8")).hexdigest()

    def _keys(self, scope: Scope) -> tuple[str, str]:
        if not isinstance(scope, Scope):
            raise TypeError(f"scope must be a Scope, got {type(scope).__name__}")
        user = "" if scope.user_id is None else self._key(scope.user_id, "user_id")
        agent = "" if scope.agent is None else self._key(scope.agent, "agent")
        return user, agent

    def _run(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        return conn.execute(self._q(sql), tuple(params))

    def _storage_error(self, exc: BaseException, doing: str) -> StorageError:
        return StorageError(f"cannot {doing} in {self.location}: {exc}; stored memory is intact")

    def _migrate(self) -> None:
        """Create or upgrade the schema; record its version.

        Raises:
            SchemaTooNewError: the database is newer than this code.
            StorageError: the database cannot be reached or changed.
        """
        known = self.schema_version()
        try:
            with self._connection() as conn, self._write_transaction(conn):
                self._lock_schema(conn)
                self._run(
                    conn,
                    f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} "
                    "(component TEXT PRIMARY KEY, version INTEGER NOT NULL)",
                )
                row = self._run(
                    conn,
                    f"SELECT version FROM {SCHEMA_TABLE} WHERE component = ?",
                    (SCHEMA_COMPONENT,),
                ).fetchone()
                found = 0 if row is None else int(row[0])
                if found > known:
                    raise SchemaTooNewError(self.location, found, known)
                if found == known:
                    return
                for version in range(found, known):
                    for statement in self.migrations[version]:
                        self._run(conn, statement)
                self._run(
                    conn,
                    f"INSERT INTO {SCHEMA_TABLE} (component, version) VALUES (?, ?) "
                    "ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                    (SCHEMA_COMPONENT, known),
                )
        except self.driver_errors as exc:
            raise self._storage_error(exc, "create or migrate the schema") from exc

    def _parse(self, scope: Scope, revision: int, generation: int, text: Any) -> MemoryDocument:
        where = f"in table {DOCUMENTS_TABLE} of {self.location} for {scope}"
        try:
            data = loads_strict_json(text)
        except (TypeError, ValueError) as exc:
            raise CorruptRowError(where, f"document is not valid JSON ({exc})") from exc
        except RecursionError as exc:
            raise CorruptRowError(where, "document JSON nested too deeply") from exc
        if not isinstance(data, dict):
            raise CorruptRowError(where, f"document is a JSON {type(data).__name__}, not an object")
        data["revision"] = int(revision)
        data["generation"] = int(generation)
        try:
            return document_from_dict(data)
        except DocumentError as exc:
            raise CorruptRowError(where, str(exc)) from exc

    def _select(self, conn: Any, keys: tuple[str, str], *, lock: bool) -> Any:
        sql = (
            f"SELECT revision, generation, document FROM {DOCUMENTS_TABLE} "
            "WHERE user_key = ? AND agent_key = ?"
        )
        return self._run(conn, sql + (self.lock_suffix if lock else ""), keys).fetchone()

    def _stored_revision(self, conn: Any, keys: tuple[str, str]) -> int:
        row = self._select(conn, keys, lock=False)
        return 0 if row is None else int(row[0])

    def _write(
        self,
        conn: Any,
        scope: Scope,
        keys: tuple[str, str],
        stored: MemoryDocument,
        *,
        previous: int | None,
    ) -> None:
        """Insert (``previous`` None) or compare-and-set update the row to ``stored``."""
        text = encode_document(scope, stored)
        if previous is None:
            cursor = self._run(
                conn,
                f"INSERT INTO {DOCUMENTS_TABLE} (user_key, agent_key, user_id, agent, revision, "
                f"generation, document, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, {self.now_sql}) "
                "ON CONFLICT (user_key, agent_key) DO NOTHING",
                (*keys, scope.user_id, scope.agent, stored.revision, stored.generation, text),
            )
            expected = 0
        else:
            cursor = self._run(
                conn,
                f"UPDATE {DOCUMENTS_TABLE} SET revision = ?, generation = ?, document = ?, "
                f"updated_at = {self.now_sql} "
                "WHERE user_key = ? AND agent_key = ? AND revision = ?",
                (stored.revision, stored.generation, text, *keys, previous),
            )
            expected = previous
        if cursor.rowcount != 1:  # another writer got in between (PostgreSQL insert race)
            raise ConflictError(scope, expected=expected, actual=self._stored_revision(conn, keys))

    # --- MemoryStore ------------------------------------------------------------------

    def load(self, scope: Scope) -> MemoryDocument:
        """The scope's document, or an empty one (revision 0) when no row exists.

        Raises:
            CorruptMemoryError: the row's document does not parse (left untouched).
            StorageError: the database cannot be read.
            TypeError, ValueError: an id is invalid.
        """
        keys = self._keys(scope)
        cache = self._parsed_rows
        token = self._change_token()
        if token is not None:
            known = cache.fresh(scope, token)
            if known is not None:
                return known
        try:
            with self._connection() as conn:
                if self.stamp_loads:
                    if scope in cache:  # the stamp can only match a document parsed before
                        stamp = self._run(conn, self._stamp_sql[0], keys).fetchone()
                        if stamp is None:
                            cache.forget(scope)
                            return _EMPTY
                        cached = cache.get(scope, tuple(stamp))
                        if cached is not None:
                            return cached
                    row = self._run(conn, self._stamp_sql[1], keys).fetchone()
                else:
                    row = self._select(conn, keys, lock=False)
        except self.driver_errors as exc:
            raise self._storage_error(exc, f"load the memory of {scope}") from exc
        if row is None:
            cache.forget(scope)
            return _EMPTY
        revision, generation, text = row[:3]
        key = (revision, generation, *row[3:]) if self.stamp_loads else (revision, generation, text)
        parsed = cache.get(scope, key, token)
        if parsed is None:
            parsed = self._parse(scope, revision, generation, text)
            cache.put(scope, key, parsed, len(text) if isinstance(text, str) else 0, token)
        return parsed

    @functools.cached_property
    def _stamp_sql(self) -> tuple[str, str]:
        """The stamp query and the row query of a stamped load (same key columns)."""
        where = f"FROM {DOCUMENTS_TABLE} {_WHERE_SCOPE}"
        return (
            f"SELECT revision, generation, {self.stamp_columns} {where}",
            f"SELECT revision, generation, document, {self.stamp_columns} {where}",
        )

    def _change_token(self) -> object:
        """A value that stays the same while nothing at all is committed to the database
        by anyone (None: the dialect cannot tell, every load reads the row). Read before
        the row, so a commit in between changes it."""
        return None

    @functools.cached_property
    def _parsed_rows(self) -> ParsedRows:
        return ParsedRows()

    def commit(
        self,
        scope: Scope,
        document: MemoryDocument,
        *,
        expected_revision: int,
        events: Sequence[ChangeEvent] = (),
    ) -> MemoryDocument:
        """Store ``document`` if the stored revision is still ``expected_revision``.

        The stored document has ``revision = expected_revision + 1`` and the stored
        ``generation``; it is returned. ``events`` go to the history in the same
        transaction.

        Raises:
            ConflictError: the stored revision differs; nothing was written.
            InvalidDocumentError: ``document`` would not load back; nothing was written.
            CorruptMemoryError: the stored row does not parse; nothing was written.
            StorageError: the write failed; the previous version is intact.
            TypeError, ValueError: bad arguments or ids.
        """
        expected = check_commit_args(document, expected_revision)
        keys = self._keys(scope)
        try:
            with self._connection() as conn, self._write_transaction(conn):
                row = self._select(conn, keys, lock=True)
                stored_revision = 0 if row is None else int(row[0])
                if stored_revision != expected:  # before parsing: conflicts are the hot path
                    raise ConflictError(scope, expected=expected, actual=stored_revision)
                current = _EMPTY if row is None else self._parse(scope, *row)
                stored = committed(document, current, expected)
                self._write(conn, scope, keys, stored, previous=None if row is None else expected)
                self._append_history(conn, keys, events, stored.revision)
                return stored
        except self.driver_errors as exc:
            raise self._storage_error(exc, f"commit the memory of {scope}") from exc

    def clear(
        self, scope: Scope, *, cleared_at: str = "", events: Sequence[ChangeEvent] = ()
    ) -> MemoryDocument:
        """Replace the scope's memory with an empty document, bumping generation and revision.

        A corrupt row is not cleared: clearing must not be a way to lose data silently.

        Raises:
            CorruptMemoryError: the stored row does not parse; nothing was written.
            StorageError: the write failed; the previous version is intact.
        """
        keys = self._keys(scope)
        for _ in range(3):  # only a PostgreSQL insert race can make this loop
            try:
                with self._connection() as conn, self._write_transaction(conn):
                    row = self._select(conn, keys, lock=True)
                    current = _EMPTY if row is None else self._parse(scope, *row)
                    stored = cleared(current, cleared_at)
                    previous = None if row is None else current.revision
                    self._write(conn, scope, keys, stored, previous=previous)
                    self._append_history(conn, keys, events, stored.revision)
                    return stored
            except ConflictError:
                continue
            except self.driver_errors as exc:
                raise self._storage_error(exc, f"clear the memory of {scope}") from exc
        raise StorageError(f"cannot clear {scope} in {self.location}: writers kept racing")

    def _append_history(
        self, conn: Any, keys: tuple[str, str], events: Sequence[ChangeEvent], revision: int
    ) -> None:
        if not events or self.max_history_events <= 0:
            return
        for event in stamp(events, revision):
            try:
                text = json.dumps(event.to_dict(), ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise StorageError(f"cannot serialise a change event: {exc}") from exc
            self._run(
                conn,
                f"INSERT INTO {HISTORY_TABLE} (user_key, agent_key, revision, event, created_at) "
                f"VALUES (?, ?, ?, ?, {self.now_sql})",
                (*keys, revision, text),
            )
        self._run(
            conn,
            f"DELETE FROM {HISTORY_TABLE} WHERE user_key = ? AND agent_key = ? AND id <= "
            f"(SELECT id FROM {HISTORY_TABLE} WHERE user_key = ? AND agent_key = ? "
            "ORDER BY id DESC LIMIT 1 OFFSET ?)",
            (*keys, *keys, self.max_history_events),
        )

    def history(self, scope: Scope, *, limit: int | None = None) -> list[ChangeEvent]:
        """The scope's change events, newest first; a damaged row is skipped and logged.

        Raises:
            StorageError: the database cannot be read.
            ValueError: ``limit`` is not a positive integer or None.
        """
        count = check_history_limit(limit, self.max_history_events)
        keys = self._keys(scope)
        if count == 0:
            return []
        try:
            with self._connection() as conn:
                rows = self._run(
                    conn,
                    f"SELECT event FROM {HISTORY_TABLE} WHERE user_key = ? AND agent_key = ? "
                    "ORDER BY id DESC LIMIT ?",
                    (*keys, count),
                ).fetchall()
        except self.driver_errors as exc:
            raise self._storage_error(exc, f"read the history of {scope}") from exc
        events: list[ChangeEvent] = []
        for (text,) in rows:
            try:
                events.append(ChangeEvent.from_dict(json.loads(text)))
            except (TypeError, ValueError, RecursionError):
                log.warning("skipped a damaged row of %s for %s", HISTORY_TABLE, scope)
        return events

    def forget_user(self, user_id: str | None) -> int:
        """Delete every row of ``user_id`` (documents and history); returns how many
        scopes there were.

        Raises:
            StorageError: the database failed; nothing was deleted.
        """
        user_key = "" if user_id is None else self._key(user_id, "user_id")
        try:
            with self._connection() as conn:
                with self._write_transaction(conn):
                    count = self._run(
                        conn, f"DELETE FROM {DOCUMENTS_TABLE} WHERE user_key = ?", (user_key,)
                    ).rowcount
                    self._run(conn, f"DELETE FROM {HISTORY_TABLE} WHERE user_key = ?", (user_key,))
                self._after_erase(conn)
        except self.driver_errors as exc:
            raise self._storage_error(exc, f"erase {Scope(user_id)}") from exc
        self._parsed_rows.drop_user(user_id)
        return int(count)

    def scopes(self) -> Iterator[Scope]:
        """Every scope with a stored row (a snapshot), with its exact ids.

        Raises:
            StorageError: the database cannot be read.
        """
        try:
            with self._connection() as conn:
                rows = self._run(
                    conn,
                    f"SELECT user_id, agent FROM {DOCUMENTS_TABLE} ORDER BY user_key, agent_key",
                ).fetchall()
        except self.driver_errors as exc:
            raise self._storage_error(exc, "list the stored scopes") from exc
        return iter([Scope(user_id, agent) for user_id, agent in rows])
