"""``queue: postgres`` — the durable, multi-replica queue in PostgreSQL (psycopg 3).

Claims run ``SELECT … FOR UPDATE SKIP LOCKED`` under a transaction-scoped advisory lock:
SKIP LOCKED alone cannot stop two replicas from leasing two *different* keys of one
(user, agent) at the same moment (each sees the other's lease only after it commits), so
claims are serialised; a claim is two short statements, jobs run outside it. Wake-ups:
``NOTIFY memfold_jobs`` when a row becomes due now or a job finishes, ``LISTEN`` on one
connection per replica; debounced rows are found by the workers' poll.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from memfold.errors import ConfigError, StorageError
from memfold.queue._sql import SqlQueue, install_schema
from memfold.queue._sql_worker import Cursor, Tx
from memfold.queue.base import Job

__all__ = ["PostgresQueue"]

logger = logging.getLogger("memfold.queue")

_CHANNEL = "memfold_jobs"
#: Advisory lock keys (arbitrary constants, ``hashtext``-free so they never collide by
#: accident with another memfold lock): schema creation and claims.
_SCHEMA_LOCK = 0x6D66_0001
_CLAIM_LOCK = 0x6D66_0002

#: memfold_jobs in this dialect's types (indented as the stored DDL always was);
#: install_schema adds the schema table and the indexes.
_CREATE_JOBS = """CREATE TABLE IF NOT EXISTS memfold_jobs (
        key_hash TEXT PRIMARY KEY,
        scope_hash TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        user_id TEXT,
        agent TEXT,
        payload JSONB NOT NULL,
        version BIGINT NOT NULL,
        first_added_at DOUBLE PRECISION NOT NULL,
        due_at DOUBLE PRECISION NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        lease_owner TEXT,
        lease_expires_at DOUBLE PRECISION,
        last_error TEXT
    )"""


class _PgTx:
    """A psycopg connection inside ``transaction()``, taking ``?`` placeholders."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[object] = ()) -> Cursor:
        cursor: Cursor = self._conn.execute(sql.replace("?", "%s"), tuple(params))
        return cursor


class PostgresQueue(SqlQueue):
    """The durable queue on PostgreSQL; every replica pointing at ``dsn`` shares it.

    Raises (constructor):
        ConfigError: psycopg / psycopg_pool are not installed.
        StorageError: the server cannot be reached or the schema is newer than this memfold.
    """

    poll_seconds = 1.0
    for_update = " FOR UPDATE"
    skip_locked = " FOR UPDATE SKIP LOCKED"

    def __init__(
        self,
        dsn: str,
        process: Callable[[Job], object],
        *,
        connect_timeout_seconds: float = 2.0,
        start: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(process, **options)
        try:
            import psycopg
            from psycopg_pool import ConnectionPool, PoolTimeout
        except ImportError as exc:
            raise ConfigError(
                "queue=postgres needs psycopg 3 and psycopg_pool: pip install 'memfold[postgres]'",
                key="queue",
            ) from exc
        from memfold.store.postgres import connection_kwargs

        self._psycopg: Any = psycopg
        self._pool_timeout: Any = PoolTimeout
        self._dsn = dsn
        self._timeout = connect_timeout_seconds
        self._connect_kwargs = connection_kwargs(connect_timeout_seconds)
        self._listener: threading.Thread | None = None
        self._pool: Any = ConnectionPool(
            dsn,
            min_size=1,
            max_size=self._worker_count + 4,
            kwargs=self._connect_kwargs,
            open=False,
            name="memfold-queue",
            timeout=connect_timeout_seconds,
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout_seconds)
            self._create_schema()
        except Exception as exc:
            self._pool.close()
            if isinstance(exc, StorageError):
                raise
            raise StorageError(
                f"cannot use the PostgreSQL queue database: {exc}; check dsn and the server"
            ) from exc
        if start:
            self.start()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Tx]:
        try:
            with self._pool.connection(timeout=self._timeout) as conn, conn.transaction():
                yield _PgTx(conn)
        except self._pool_timeout as exc:  # only getting the connection waits on the pool
            raise StorageError(
                f"cannot reach the PostgreSQL queue within connect_timeout_seconds="
                f"{self._timeout:g}: {exc}; check the server"
            ) from exc

    def _claim_lock(self, tx: Tx) -> None:
        tx.execute("SELECT pg_advisory_xact_lock(?)", (_CLAIM_LOCK,))

    def _fast_commit(self, tx: Tx) -> None:
        # the claim lock is held until commit: not waiting for the WAL flush keeps claims
        # from queueing behind the disk (a lost claim only makes the job claimable again)
        tx.execute("SET LOCAL synchronous_commit = off")

    def _notify(self, tx: Tx) -> None:
        tx.execute(f"NOTIFY {_CHANNEL}")

    def _create_schema(self) -> None:
        with self._transaction() as tx:
            tx.execute("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,))
            install_schema(tx, _CREATE_JOBS, database="the PostgreSQL queue")

    def _start_listener(self) -> None:
        if self._listener is None:
            self._listener = threading.Thread(
                target=self._listen, name="memfold-queue-listen", daemon=True
            )
            self._listener.start()

    def _listen(self) -> None:
        """Turn NOTIFYs from every replica into local wake-ups; reconnect on errors."""
        while not self._stop.is_set():
            try:
                with self._psycopg.connect(self._dsn, **self._connect_kwargs) as conn:
                    conn.execute(f"LISTEN {_CHANNEL}")
                    while not self._stop.is_set():
                        woke = False
                        for _ in conn.notifies(timeout=0.5, stop_after=1):
                            woke = True
                        if woke:
                            with self._cond:
                                self._cond.notify_all()
            except Exception:
                if self._stop.is_set():
                    return
                logger.warning("memfold queue: LISTEN connection lost; reconnecting", exc_info=True)
                self._stop.wait(1.0)

    def _close_connections(self) -> None:
        if self._listener is not None:
            self._listener.join(2.0)
        self._pool.close(timeout=1.0)
