"""The ``store`` fixture the contract suite runs over: one parameter per backend.

Add a backend by adding an entry to ``BACKENDS`` (a function of the pytest ``request``
and ``tmp_path`` returning a :class:`Backend`); every test in ``test_store_contract.py``
then runs against it. A backend that needs a server asks for its fixture through
``request.getfixturevalue`` (``postgres_dsn`` skips without a server, fails under CI).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memfold.store._sql import BaseSqlStore
from memfold.store.base import MemoryStore
from memfold.store.inmemory import InMemoryStore
from memfold.store.jsonfile import JsonFileStore
from memfold.store.sqlite import SqliteStore


@dataclass(frozen=True)
class Backend:
    """How to open a store; ``open()`` twice gives two instances over the same data
    when the backend is ``durable``."""

    name: str
    open: Callable[..., MemoryStore]  # keyword options of the store, e.g. max_history_events
    durable: bool


def _json(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return Backend("json", lambda **kw: JsonFileStore(tmp_path / "home", **kw), durable=True)


def _inmemory(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    shared: dict[str, InMemoryStore] = {}

    def open_shared(*, max_history_events: int = 1000) -> InMemoryStore:
        if "store" not in shared:
            shared["store"] = InMemoryStore(max_history_events=max_history_events)
        return shared["store"]

    return Backend("inmemory", open_shared, durable=False)


def _sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return Backend(
        "sqlite", lambda **kw: SqliteStore(tmp_path / "memfold.sqlite3", **kw), durable=True
    )


def _postgres(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    dsn: str = request.getfixturevalue("postgres_dsn")
    from memfold.store.postgres import PostgresStore

    return Backend(
        "postgres", lambda **kw: PostgresStore(dsn, max_connections=12, **kw), durable=True
    )


BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], Backend]] = {
    "json": _json,
    "inmemory": _inmemory,
    "sqlite": _sqlite,
    "postgres": _postgres,
}


@pytest.fixture(params=sorted(BACKENDS))
def store_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return BACKENDS[request.param](request, tmp_path)


@pytest.fixture(params=sorted(name for name in BACKENDS if name != "inmemory"))
def durable_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Backends whose data outlives the store instance (every one but ``inmemory``)."""
    backend = BACKENDS[request.param](request, tmp_path)
    assert backend.durable
    return backend


@pytest.fixture
def store(store_backend: Backend) -> Iterator[MemoryStore]:
    opened = store_backend.open()
    yield opened
    opened.close()


# --- SQL backends: raw access for the schema, corruption and concurrency tests -----------


@dataclass(frozen=True)
class SqlBackend:
    """A SQL store plus raw SQL on its database (written with ``?`` placeholders)."""

    name: str
    open: Callable[[], BaseSqlStore]
    execute: Callable[[str, tuple[object, ...]], list[tuple[object, ...]]]
    settings: dict[str, object]  # MemoryConfig keys selecting this database


def _sqlite_sql(request: pytest.FixtureRequest, tmp_path: Path) -> SqlBackend:
    home = tmp_path / "home"
    path = home / "memfold.sqlite3"

    def execute(sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        conn = sqlite3.connect(path)
        try:
            with conn:
                return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    return SqlBackend(
        "sqlite", lambda: SqliteStore(path), execute, {"storage": "sqlite", "home": home}
    )


def _postgres_sql(request: pytest.FixtureRequest, tmp_path: Path) -> SqlBackend:
    dsn: str = request.getfixturevalue("postgres_dsn")
    import psycopg

    from memfold.store.postgres import PostgresStore

    def execute(sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        with psycopg.connect(dsn, autocommit=True) as conn:
            cursor = conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    settings: dict[str, object] = {"storage": "postgres", "dsn": dsn, "home": tmp_path / "home"}
    return SqlBackend("postgres", lambda: PostgresStore(dsn), execute, settings)


SQL_BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], SqlBackend]] = {
    "sqlite": _sqlite_sql,
    "postgres": _postgres_sql,
}


@pytest.fixture(params=sorted(SQL_BACKENDS))
def sql_backend(request: pytest.FixtureRequest, tmp_path: Path) -> SqlBackend:
    return SQL_BACKENDS[request.param](request, tmp_path)
