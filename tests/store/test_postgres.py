"""PostgreSQL store specifics: driver missing, server unreachable, insert races, replicas
migrating together. Schema, corruption, reopen and 8-writer tests run on PostgreSQL too,
through ``sql_backend`` in ``test_sqlite.py``."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from memfold.config import MemoryConfig
from memfold.errors import ConfigError, ConflictError, StorageError
from memfold.model import MemoryDocument, Scope
from memfold.store.factory import open_store

ALICE = Scope("alice")


def test_missing_driver_is_a_config_error_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    monkeypatch.delitem(sys.modules, "memfold.store.postgres", raising=False)
    config = MemoryConfig(storage="postgres", dsn="postgresql://u@127.0.0.1:1/db")
    with pytest.raises(ConfigError, match=r"pip install 'memfold\[postgres\]'") as caught:
        open_store(config)
    assert caught.value.key == "storage"


def test_unreachable_server_is_a_storage_error_without_the_password() -> None:
    from memfold.store.postgres import PostgresStore

    dsn = "postgresql://memfold:s3cret-pw@127.0.0.1:1/memfold?connect_timeout=1"
    with pytest.raises(StorageError, match="cannot connect") as caught:
        PostgresStore(dsn, connect_timeout_seconds=0.3)
    assert "s3cret-pw" not in str(caught.value)
    assert "127.0.0.1" in str(caught.value)


def _wait_for_lock_wait(dsn: str, deadline: float) -> None:
    """Poll until some session of this database waits on a lock (the blocked INSERT)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone()
            if row is not None and row[0] > 0:
                return
            time.sleep(0.01)  # polling a server state, not waiting for a timer
    pytest.fail("the store's INSERT never blocked on the competing transaction")


def test_losing_the_first_insert_race_is_a_conflict_and_writes_nothing(postgres_dsn) -> None:
    import psycopg

    from memfold.store.postgres import PostgresStore

    store = PostgresStore(postgres_dsn)
    outcome: list[BaseException | MemoryDocument] = []
    with psycopg.connect(postgres_dsn) as rival:  # a transaction, committed at exit
        rival.execute(
            "INSERT INTO memfold_documents (user_key, agent_key, user_id, agent, revision, "
            "generation, document, updated_at) VALUES ('alice', '', 'alice', NULL, 1, 0, "
            "%s, now())",
            ('{"facts": []}',),
        )

        def commit() -> None:
            try:
                outcome.append(store.commit(ALICE, MemoryDocument(), expected_revision=0))
            except BaseException as exc:  # checked below
                outcome.append(exc)

        thread = threading.Thread(target=commit)
        thread.start()
        _wait_for_lock_wait(postgres_dsn, time.monotonic() + 10)
    thread.join(10)
    assert len(outcome) == 1
    assert isinstance(outcome[0], ConflictError)
    assert (outcome[0].expected, outcome[0].actual) == (0, 1)
    assert store.load(ALICE).revision == 1
    store.close()


def test_replicas_opening_a_fresh_database_together_migrate_once(postgres_dsn) -> None:
    from memfold.store.postgres import PostgresStore

    start = threading.Barrier(4)
    opened: list[PostgresStore] = []
    errors: list[BaseException] = []

    def replica() -> None:
        try:
            start.wait()
            opened.append(PostgresStore(postgres_dsn, min_connections=1, max_connections=2))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=replica) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(opened) == 4
    opened[0].commit(ALICE, MemoryDocument(), expected_revision=0)
    assert all(store.load(ALICE).revision == 1 for store in opened)
    for store in opened:
        store.close()


def test_version_1_rows_keyed_by_a_long_or_mark_prefixed_id_are_rekeyed_on_open(
    postgres_dsn,
) -> None:
    import psycopg

    from memfold.store.postgres import PostgresStore

    store = PostgresStore(postgres_dsn)
    store.close()
    marked, long_id = "\x01looks-hashed", "agent-" + "x" * 1200  # both storable in version 1
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE memfold_schema SET version = 1 WHERE component = 'store'")
        for user, agent in ((marked, None), ("alice", long_id)):
            conn.execute(
                "INSERT INTO memfold_documents (user_key, agent_key, user_id, agent, revision, "
                "generation, document, updated_at) VALUES (%s, %s, %s, %s, 3, 1, %s, now())",
                (user, agent or "", user, agent, '{"facts": []}'),
            )
    reopened = PostgresStore(postgres_dsn)
    for scope in (Scope(marked), Scope("alice", long_id)):
        assert (reopened.load(scope).revision, reopened.load(scope).generation) == (3, 1)
        assert reopened.commit(scope, MemoryDocument(), expected_revision=3).revision == 4
    assert set(reopened.scopes()) == {Scope(marked), Scope("alice", long_id)}
    reopened.close()
