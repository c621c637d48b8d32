"""``storage: postgres`` — every scope in one PostgreSQL table, shared by all replicas.

psycopg 3 with a ``psycopg_pool.ConnectionPool`` (autocommit connections; writes open
an explicit transaction and hold the scope's row with ``SELECT … FOR UPDATE``; the first
write of a scope is ``INSERT … ON CONFLICT DO NOTHING``, and losing that race is a
:class:`~memfold.errors.ConflictError`). An id longer than 1,000 bytes is keyed by its
SHA-256, since a btree index entry cannot exceed ~2,700 bytes. Migrations take a
transaction-scoped advisory lock, so replicas starting together do not race on
``CREATE TABLE``.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

from memfold.errors import StorageError
from memfold.store._sql import DOCUMENTS_TABLE, HISTORY_TABLE, BaseSqlStore
from memfold.store.base import DEFAULT_MAX_HISTORY_EVENTS, check_max_history_events

__all__ = ["PostgresStore", "connection_kwargs"]

#: ``pg_advisory_xact_lock`` key of schema migrations ("memfold" in ASCII, as a bigint).
_MIGRATION_LOCK = 0x6D656D666F6C64

#: A btree index entry holds at most ~2700 bytes, both key columns together: longer ids
#: are keyed by their hash (``BaseSqlStore.key_limit_bytes``).
_KEY_LIMIT_BYTES = 1000

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        f"CREATE TABLE {DOCUMENTS_TABLE} ("
        "user_key TEXT NOT NULL, agent_key TEXT NOT NULL, user_id TEXT, agent TEXT, "
        "revision BIGINT NOT NULL, generation BIGINT NOT NULL, document TEXT NOT NULL, "
        "updated_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (user_key, agent_key))",
    ),
    # 2: ids over _KEY_LIMIT_BYTES (or starting with the mark) are keyed by their hash
    tuple(
        f"UPDATE {DOCUMENTS_TABLE} SET {column} = chr(1) || "  # noqa: S608 (constants only)
        f"encode(sha256(convert_to({column}, 'UTF8')), 'hex') "
        f"WHERE octet_length({column}) > {_KEY_LIMIT_BYTES} OR left({column}, 1) = chr(1)"
        for column in ("user_key", "agent_key")
    ),
    # 3: change history (memfold_history, see memfold.store._sql)
    (
        f"CREATE TABLE IF NOT EXISTS {HISTORY_TABLE} ("
        "id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
        "user_key TEXT NOT NULL, agent_key TEXT NOT NULL, revision BIGINT NOT NULL, "
        "event TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL)",
        f"CREATE INDEX IF NOT EXISTS {HISTORY_TABLE}_scope "
        f"ON {HISTORY_TABLE} (user_key, agent_key, id)",
    ),
)


def connection_kwargs(connect_timeout_seconds: float) -> dict[str, object]:
    """psycopg connection options of every memfold pool: autocommit, and libpq's
    ``connect_timeout`` (whole seconds, at least 2, as libpq requires) so a connection
    attempt to an unreachable server gives up too."""
    return {"autocommit": True, "connect_timeout": max(2, math.ceil(connect_timeout_seconds))}


def _safe_dsn(dsn: str) -> str:
    """``dsn`` without its password, for messages."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error:
        return "PostgreSQL (unparsable dsn)"
    if "password" in params:
        params["password"] = "***"  # noqa: S105 (a mask, not a password)
    return make_conninfo("", **params)


class PostgresStore(BaseSqlStore):
    """A :class:`~memfold.store.base.MemoryStore` in PostgreSQL (``dsn``)."""

    placeholder = "%s"
    lock_suffix = " FOR UPDATE"
    now_sql = "now()"
    stamp_loads = True
    # xmin: the transaction that wrote this row version; any UPDATE (even of the document
    # alone, keeping revision and updated_at) or DELETE + INSERT gives a new one
    stamp_columns = "updated_at, xmin::text"
    key_limit_bytes = _KEY_LIMIT_BYTES
    migrations = _MIGRATIONS
    driver_errors = (psycopg.Error,)

    def __init__(
        self,
        dsn: str,
        *,
        min_connections: int = 1,
        max_connections: int = 10,
        connect_timeout_seconds: float = 2.0,
        max_history_events: int = DEFAULT_MAX_HISTORY_EVENTS,
    ) -> None:
        """Connect, then create or migrate the schema.

        ``connect_timeout_seconds`` bounds every wait for a connection, at start and on
        each call: with the server down a call fails after it instead of psycopg_pool's
        30 s, and the pool reconnects by itself once the server is back.

        Raises:
            SchemaTooNewError: the database was migrated by a newer memfold.
            StorageError: the server cannot be reached within the timeout, or the schema
                cannot be created.
        """
        self.max_history_events = check_max_history_events(max_history_events)
        self.location = f"PostgreSQL {_safe_dsn(dsn)}"
        self._timeout = connect_timeout_seconds
        self._pool = ConnectionPool(
            dsn,
            min_size=min_connections,
            max_size=max_connections,
            kwargs=connection_kwargs(connect_timeout_seconds),
            open=False,
            name="memfold-store",
            timeout=connect_timeout_seconds,
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout_seconds)
        except psycopg.Error as exc:
            self._pool.close()
            raise StorageError(
                f"cannot connect to {self.location} within {connect_timeout_seconds:g}s: {exc}; "
                "check dsn and that the server is running"
            ) from exc
        try:
            self._migrate()
        except BaseException:
            self._pool.close()
            raise

    @contextlib.contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
        if self._pool.closed:
            raise StorageError(f"{self.location}: the store is closed")
        try:
            with self._pool.connection(timeout=self._timeout) as conn:
                yield conn
        except PoolTimeout as exc:  # only getting the connection waits on the pool
            raise StorageError(
                f"cannot reach {self.location} within connect_timeout_seconds="
                f"{self._timeout:g}: {exc}; stored memory is intact, check the server"
            ) from exc

    @contextlib.contextmanager
    def _write_transaction(self, conn: psycopg.Connection[tuple[object, ...]]) -> Iterator[None]:
        with conn.transaction():
            yield

    def _lock_schema(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))

    def close(self) -> None:
        """Close the pool's connections. Idempotent."""
        self._pool.close()
