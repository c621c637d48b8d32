"""``open_store``: the ``storage`` setting → a :class:`~memfold.store.base.MemoryStore`."""

from __future__ import annotations

from memfold._plugins import load_factory
from memfold.config import MemoryConfig
from memfold.errors import ConfigError
from memfold.store.base import MemoryStore

__all__ = ["open_store"]


def open_store(config: MemoryConfig) -> MemoryStore:
    """Build the store that ``config.storage`` names.

    ``json`` → :class:`JsonFileStore` under ``config.home``; ``sqlite`` →
    :class:`SqliteStore` in ``{home}/memfold.sqlite3``; ``postgres`` →
    :class:`PostgresStore` on ``config.dsn``; ``memory`` → :class:`InMemoryStore`;
    ``package.module:Factory`` → ``Factory(config)``.

    Raises:
        ConfigError: the backend is unknown, its driver is not installed, it cannot be
            imported, or the factory did not return a store.
        StorageError: a SQL database cannot be opened or is newer than this memfold.
    """
    storage = config.storage
    if storage == "json":
        from memfold.store.jsonfile import JsonFileStore

        return JsonFileStore(config.home, max_history_events=config.max_history_events)
    if storage == "memory":
        from memfold.store.inmemory import InMemoryStore

        return InMemoryStore(max_history_events=config.max_history_events)
    if storage == "sqlite":
        from memfold.store.sqlite import SqliteStore

        return SqliteStore.in_home(config.home, max_history_events=config.max_history_events)
    if storage == "postgres":
        return _postgres(config)
    if ":" in storage:
        return _from_factory(storage, config)
    raise ConfigError(
        f"storage={storage!r}: use json, memory, sqlite, postgres or 'package.module:Factory'",
        key="storage",
    )


def _postgres(config: MemoryConfig) -> MemoryStore:
    try:
        from memfold.store.postgres import PostgresStore
    except ImportError as exc:
        raise ConfigError(
            f"storage='postgres' needs psycopg 3 and psycopg-pool ({exc}): "
            "pip install 'memfold[postgres]'",
            key="storage",
        ) from exc
    if not config.dsn:
        raise ConfigError("storage=postgres needs dsn (e.g. postgresql://user@host/db)", key="dsn")
    return PostgresStore(
        config.dsn,
        max_history_events=config.max_history_events,
        connect_timeout_seconds=config.connect_timeout_seconds,
    )


def _from_factory(spec: str, config: MemoryConfig) -> MemoryStore:
    store = load_factory(spec, key="storage")(config)
    if not isinstance(store, MemoryStore):
        raise ConfigError(
            f"storage={spec!r}: the factory returned {type(store).__name__}, "
            "which lacks the MemoryStore methods (load, commit, clear, scopes, close)",
            key="storage",
        )
    return store
