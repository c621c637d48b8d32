"""``storage: sqlite`` — every scope in one SQLite file, ``{home}/memfold.sqlite3``.

WAL journal (readers never wait for the writer), ``synchronous=FULL`` (a commit that
returned survives a power loss), ``secure_delete`` (deleted and overwritten text is zeroed
in the file, so an erased user leaves no bytes behind; ``forget_user`` also truncates the
WAL), and a busy timeout so writers from other threads and
processes queue up instead of failing. Writes run in ``BEGIN IMMEDIATE`` transactions,
which take the database's write lock before reading the row they replace.

Connections come from a small lock-protected pool: a connection is used by one thread
at a time (``check_same_thread=False`` only lets another thread close or reuse it).

Loads reuse the parsed document while the database is unchanged: one more connection,
which never writes, reads ``PRAGMA data_version``, a number SQLite changes whenever any
other connection (of this store, of another process, an operator's ``sqlite3`` shell)
commits to the file. While it is the same as when a scope's row was last read, the
cached document is returned without a query (DESIGN.md rule 10 holds: any commit by
anyone makes the next load read the row again).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from memfold._private import private_database
from memfold.errors import StorageError
from memfold.store._sql import DOCUMENTS_TABLE, HISTORY_TABLE, BaseSqlStore
from memfold.store.base import (
    DEFAULT_MAX_HISTORY_EVENTS,
    check_max_history_events,
    not_a_regular_file,
)

__all__ = [
    "DATABASE_FILE",
    "SqliteStore",
    "check_regular_file",
    "switch_to_wal",
    "truncate_wal",
]

DATABASE_FILE = "memfold.sqlite3"

# Module-level so tests can drive the WAL-switch back-off without waiting.
_sleep = time.sleep
_monotonic = time.monotonic

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        f"CREATE TABLE {DOCUMENTS_TABLE} ("
        "user_key TEXT NOT NULL, agent_key TEXT NOT NULL, user_id TEXT, agent TEXT, "
        "revision INTEGER NOT NULL, generation INTEGER NOT NULL, document TEXT NOT NULL, "
        "updated_at TEXT NOT NULL, PRIMARY KEY (user_key, agent_key)) WITHOUT ROWID",
    ),
    # 2: change history (memfold_history, see memfold.store._sql)
    (
        f"CREATE TABLE IF NOT EXISTS {HISTORY_TABLE} ("
        "id INTEGER PRIMARY KEY, user_key TEXT NOT NULL, "
        "agent_key TEXT NOT NULL, revision INTEGER NOT NULL, event TEXT NOT NULL, "
        "created_at TEXT NOT NULL)",
        f"CREATE INDEX IF NOT EXISTS {HISTORY_TABLE}_scope "
        f"ON {HISTORY_TABLE} (user_key, agent_key, id)",
    ),
)


def check_regular_file(path: Path, what: str) -> None:
    """Refuse a database path that exists but is not a regular file (a FIFO there would
    block SQLite's first read forever).

    Raises:
        StorageError: naming the path, what it is, and the fix.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(f"cannot open {what} {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(mode):
        raise not_a_regular_file(path, mode, what)


def switch_to_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Set WAL mode on ``conn``, waiting up to ``timeout`` seconds for other writers.

    While another connection writes in rollback-journal mode (a process still creating
    the file), SQLite refuses the switch at once, without its busy handler; so retry.
    """
    deadline = _monotonic() + timeout
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
            if not busy or _monotonic() >= deadline:
                raise
        _sleep(pause)
        pause = min(pause * 2, 0.1)


def truncate_wal(conn: sqlite3.Connection, location: str) -> None:
    """Checkpoint the WAL into the database file and truncate it, so pages that held
    erased rows do not linger in the WAL. A reader elsewhere can hold it open; then the
    WAL is truncated by a later checkpoint (logged)."""
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        logging.getLogger("memfold.store").warning(
            "%s: another connection kept the WAL busy; erased rows stay in it until the "
            "next checkpoint",
            location,
        )


class SqliteStore(BaseSqlStore):
    """A :class:`~memfold.store.base.MemoryStore` in one SQLite database file.

    ``SqliteStore.in_home(home)`` opens the standard file under a memfold home.
    """

    placeholder = "?"
    lock_suffix = ""  # BEGIN IMMEDIATE already holds the write lock
    now_sql = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
    migrations = _MIGRATIONS
    driver_errors = (sqlite3.Error,)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_seconds: float = 30.0,
        max_idle_connections: int = 8,
        max_history_events: int = DEFAULT_MAX_HISTORY_EVENTS,
    ) -> None:
        """Open (creating and migrating if needed) the database at ``path``.

        Raises:
            SchemaTooNewError: the file was written by a newer memfold.
            StorageError: the file cannot be created, opened or migrated.
            ValueError: a bad timeout or pool size.
        """
        if not busy_timeout_seconds > 0:
            raise ValueError(f"busy_timeout_seconds={busy_timeout_seconds!r}: must be positive")
        if max_idle_connections < 0:
            raise ValueError(f"max_idle_connections={max_idle_connections!r}: must be >= 0")
        self.max_history_events = check_max_history_events(max_history_events)
        self.path = Path(path).absolute()
        self.location = f"SQLite database {self.path}"
        self._timeout = busy_timeout_seconds
        self._max_idle = max_idle_connections
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self._watcher: sqlite3.Connection | None = None  # reads data_version only
        self._watch_lock = threading.Lock()
        check_regular_file(self.path, "the SQLite database")
        try:
            private_database(self.path)  # security: 0600 file (and WAL/SHM) in a 0700 folder
        except OSError as exc:
            raise StorageError(f"cannot create {self.path}: {exc.strerror}") from exc
        try:
            self._migrate()
        except BaseException:
            self.close()
            raise

    @classmethod
    def in_home(
        cls,
        home: str | os.PathLike[str],
        *,
        max_history_events: int = DEFAULT_MAX_HISTORY_EVENTS,
    ) -> SqliteStore:
        """The store of a memfold ``home`` folder: ``{home}/memfold.sqlite3``."""
        return cls(Path(home) / DATABASE_FILE, max_history_events=max_history_events)

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            switch_to_wal(conn, self._timeout)
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA secure_delete = ON")  # security: erased text is zeroed
        except BaseException:
            conn.close()
            raise
        return conn

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise StorageError(f"{self.location}: the store is closed")
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._open()
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:  # a failure left it mid-transaction: do not reuse it
                conn.close()
                raise
            self._release(conn)
            raise
        self._release(conn)

    def _release(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        conn.close()

    @contextlib.contextmanager
    def _write_transaction(self, conn: sqlite3.Connection) -> Iterator[None]:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _change_token(self) -> object:
        with self._watch_lock:
            if self._closed:
                return None
            try:
                if self._watcher is None:
                    self._watcher = sqlite3.connect(
                        self.path, timeout=self._timeout, isolation_level=None,
                        check_same_thread=False,
                    )  # fmt: skip
                # fetchall ends the statement: no read transaction stays open to hold
                # back a WAL checkpoint (forget_user truncates the WAL)
                rows = self._watcher.execute("PRAGMA data_version").fetchall()
            except sqlite3.Error:
                return None  # the load reads the row and reports the problem itself
        return ("data_version", int(rows[0][0])) if rows else None

    def _after_erase(self, conn: sqlite3.Connection) -> None:
        truncate_wal(conn, self.location)

    def close(self) -> None:
        """Close the idle connections; ones in use close when released. Idempotent."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        with self._watch_lock:
            watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.close()
