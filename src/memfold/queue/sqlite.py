"""``queue: sqlite`` — the durable queue in ``{home}/memfold-queue.sqlite3``.

Its own file rather than the store's: queue writes (one per record) then never wait on a
store commit's write lock, and either file can be deleted alone. WAL lets readers run
beside the single writer; every write transaction is ``BEGIN IMMEDIATE`` (the write lock
is taken at once, so a claim's SELECT and UPDATE are atomic across processes) and waits
up to ``busy_timeout_seconds`` for it. One connection per thread.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from memfold._private import private_database
from memfold.errors import StorageError
from memfold.queue._sql import SqlQueue, install_schema
from memfold.queue._sql_worker import Tx
from memfold.queue.base import Job
from memfold.store.sqlite import check_regular_file, switch_to_wal, truncate_wal

__all__ = ["QUEUE_FILE", "SqliteQueue"]

QUEUE_FILE = "memfold-queue.sqlite3"

#: memfold_jobs in this dialect's types (indented as the stored DDL always was);
#: install_schema adds the schema table and the indexes.
_CREATE_JOBS = """CREATE TABLE IF NOT EXISTS memfold_jobs (
        key_hash TEXT PRIMARY KEY,
        scope_hash TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        user_id TEXT,
        agent TEXT,
        payload TEXT NOT NULL,
        version INTEGER NOT NULL,
        first_added_at REAL NOT NULL,
        due_at REAL NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        lease_owner TEXT,
        lease_expires_at REAL,
        last_error TEXT
    )"""


class SqliteQueue(SqlQueue):
    """The durable queue on one SQLite file, shared by every process on this machine.

    Raises (constructor):
        StorageError: the file cannot be opened or was written by a newer memfold.
    """

    poll_seconds = 0.2

    def __init__(
        self,
        path: str | Path,
        process: Callable[[Job], object],
        *,
        busy_timeout_seconds: float = 30.0,
        start: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(process, **options)
        self.path = Path(path)
        self._busy_timeout = busy_timeout_seconds
        self._local = threading.local()
        # Each connection with the thread that uses it: closing a connection another thread
        # is using crashes the interpreter, so close() only closes idle threads' ones.
        self._connections: dict[sqlite3.Connection, threading.Thread] = {}
        self._connections_lock = threading.Lock()
        try:
            check_regular_file(self.path, "the queue database")
            private_database(self.path)  # security: the queue holds (redacted) turns
            self._create_schema()
        except (sqlite3.Error, OSError) as exc:
            self._close_connections()
            raise StorageError(
                f"cannot open the queue database {self.path}: {exc}; check the path and "
                "its permissions"
            ) from exc
        if start:
            self.start()

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout,
                isolation_level=None,  # we issue BEGIN IMMEDIATE / COMMIT ourselves
                check_same_thread=False,  # close() closes every thread's connection
            )
            switch_to_wal(conn, self._busy_timeout)  # several processes may open it at once
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL: durable against process crash
            conn.execute("PRAGMA secure_delete=ON")  # security: a forgotten user's turns are zeroed
            self._local.conn = conn
            with self._connections_lock:
                self._connections[conn] = threading.current_thread()
        return conn

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Tx]:
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _after_erase(self) -> None:
        truncate_wal(self._connection(), f"the queue database {self.path}")

    def _create_schema(self) -> None:
        with self._transaction() as tx:
            install_schema(tx, _CREATE_JOBS, database=f"the queue database {self.path}")

    def _release_thread_connection(self) -> None:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            with self._connections_lock:
                self._connections.pop(conn, None)
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def _close_connections(self) -> None:
        me = threading.current_thread()
        with self._connections_lock:
            idle = [c for c, t in self._connections.items() if t is me or not t.is_alive()]
            for conn in idle:
                del self._connections[conn]
        for conn in idle:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._local.conn = None
