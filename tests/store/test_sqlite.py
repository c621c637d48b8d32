"""SQL stores beyond the contract: schema versions, damaged rows, reopening, many writers.

Tests taking ``sql_backend`` run on SQLite and PostgreSQL (``conftest.SQL_BACKENDS``);
the ones at the end are about SQLite alone. PostgreSQL-only tests: ``test_postgres.py``.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memfold.config import MemoryConfig
from memfold.errors import ConflictError, CorruptMemoryError, StorageError
from memfold.model import Fact, MemoryDocument, Scope, Watermark
from memfold.store._sql import SchemaTooNewError
from memfold.store.factory import open_store
from memfold.store.sqlite import SqliteStore

ALICE = Scope("alice", "coder")


def _fact(n: int) -> Fact:
    return Fact(id=f"fact_{n:08x}", content=f"fact {n}", category="preference")


def test_schema_version_is_recorded(sql_backend) -> None:
    store = sql_backend.open()
    store.close()
    rows = sql_backend.execute("SELECT component, version FROM memfold_schema", ())
    assert rows == [("store", type(store).schema_version())]
    assert SqliteStore.schema_version() >= 1


def test_reopening_keeps_data_and_schema_row(sql_backend) -> None:
    first = sql_backend.open()
    stored = first.commit(ALICE, MemoryDocument(facts=(_fact(1),)), expected_revision=0)
    first.close()
    second = sql_backend.open()
    assert second.load(ALICE) == stored
    second.close()
    assert len(sql_backend.execute("SELECT * FROM memfold_schema", ())) == 1


def test_database_from_a_newer_memfold_is_refused_and_left_alone(sql_backend) -> None:
    store = sql_backend.open()
    store.commit(ALICE, MemoryDocument(facts=(_fact(1),)), expected_revision=0)
    store.close()
    known = type(store).schema_version()
    sql_backend.execute("UPDATE memfold_schema SET version = 99 WHERE component = 'store'", ())
    with pytest.raises(SchemaTooNewError, match=r"schema version 99.*upgrade memfold") as caught:
        sql_backend.open()
    assert (caught.value.found, caught.value.known) == (99, known)
    assert sql_backend.execute("SELECT version FROM memfold_schema", ()) == [(99,)]
    assert sql_backend.execute("SELECT revision FROM memfold_documents", ()) == [(1,)]


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ('{"facts": [', "not valid JSON"),
        ("[1, 2]", "not an object"),
        ('{"facts": 5}', "facts"),
        ('{"custom": NaN}', "NaN"),
    ],
)
def test_corrupt_row_raises_naming_table_and_scope_and_is_never_overwritten(
    sql_backend, damage: str, reason: str
) -> None:
    store = sql_backend.open()
    store.commit(ALICE, MemoryDocument(facts=(_fact(1),)), expected_revision=0)
    sql_backend.execute("UPDATE memfold_documents SET document = ?", (damage,))
    with pytest.raises(CorruptMemoryError, match=reason) as caught:
        store.load(ALICE)
    message = str(caught.value)
    assert "memfold_documents" in message
    assert "'alice'" in message
    assert "'coder'" in message
    with pytest.raises(CorruptMemoryError):
        store.commit(ALICE, MemoryDocument(), expected_revision=1)
    with pytest.raises(CorruptMemoryError):
        store.clear(ALICE)
    assert sql_backend.execute("SELECT document, revision FROM memfold_documents", ()) == [
        (damage, 1)
    ]
    # other scopes are unaffected
    assert store.commit(Scope("bob"), MemoryDocument(), expected_revision=0).revision == 1
    store.close()


def test_revision_and_generation_columns_are_authoritative(sql_backend) -> None:
    store = sql_backend.open()
    store.commit(ALICE, MemoryDocument(facts=(_fact(1),)), expected_revision=0)
    sql_backend.execute("UPDATE memfold_documents SET revision = 5, generation = 3", ())
    loaded = store.load(ALICE)
    assert (loaded.revision, loaded.generation, loaded.facts) == (5, 3, (_fact(1),))
    with pytest.raises(ConflictError):
        store.commit(ALICE, loaded, expected_revision=1)
    assert store.commit(ALICE, loaded, expected_revision=5).generation == 3
    store.close()


def test_clear_keeps_watermarks_and_rows_keep_exact_ids(sql_backend) -> None:
    store = sql_backend.open()
    marks = {"t1": Watermark("id:m1", "2026-01-01T00:00:00Z")}
    store.commit(Scope(None, None), MemoryDocument(watermarks=marks), expected_revision=0)
    store.clear(Scope(None, None))
    rows = sql_backend.execute(
        "SELECT user_key, agent_key, user_id, agent FROM memfold_documents", ()
    )
    assert rows == [("", "", None, None)]
    assert dict(store.load(Scope()).watermarks) == marks
    store.close()


def test_eight_threads_with_their_own_store_instances_lose_no_update(sql_backend) -> None:
    stores = [sql_backend.open() for _ in range(8)]
    start = threading.Barrier(8)
    errors: list[BaseException] = []
    per_thread = 4

    def writer(t: int) -> None:
        store = stores[t]
        try:
            start.wait()
            for i in range(per_thread):
                while True:
                    doc = store.load(ALICE)
                    new = doc.with_changes(facts=(*doc.facts, _fact(t * 100 + i)))
                    try:
                        store.commit(ALICE, new, expected_revision=doc.revision)
                        break
                    except ConflictError:
                        continue
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.close()
    assert errors == []
    check = sql_backend.open()
    final = check.load(ALICE)
    check.close()
    assert final.revision == 8 * per_thread
    assert sorted(f.id for f in final.facts) == sorted(
        _fact(t * 100 + i).id for t in range(8) for i in range(per_thread)
    )


def test_closed_store_raises_storage_error(sql_backend) -> None:
    store = sql_backend.open()
    store.close()
    with pytest.raises(StorageError, match="closed"):
        store.load(ALICE)
    store.close()


def test_factory_opens_the_configured_sql_store(sql_backend) -> None:
    store = open_store(MemoryConfig(**sql_backend.settings))
    try:
        assert (
            type(store).__name__
            == {"sqlite": "SqliteStore", "postgres": "PostgresStore"}[sql_backend.name]
        )
        store.commit(ALICE, MemoryDocument(facts=(_fact(7),)), expected_revision=0)
    finally:
        store.close()
    reopened = sql_backend.open()
    assert reopened.load(ALICE).facts == (_fact(7),)
    reopened.close()


# --- SQLite only ---------------------------------------------------------------------------


def test_sqlite_lives_in_one_wal_file_under_home(tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    store = open_store(MemoryConfig(storage="sqlite", home=home))
    assert isinstance(store, SqliteStore)
    assert store.path == (home / "memfold.sqlite3").absolute()
    store.commit(Scope("a"), MemoryDocument(), expected_revision=0)
    store.commit(Scope("b", "x"), MemoryDocument(), expected_revision=0)
    store.close()
    assert [p.name for p in home.iterdir() if p.suffix == ".sqlite3"] == ["memfold.sqlite3"]
    import sqlite3

    conn = sqlite3.connect(home / "memfold.sqlite3")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT count(*) FROM memfold_documents").fetchone() == (2,)
    finally:
        conn.close()


def test_sqlite_file_that_is_not_a_database_raises_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "memfold.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StorageError, match=r"memfold\.sqlite3"):
        SqliteStore(path)
    assert path.read_bytes().startswith(b"this is not a database")


def test_opening_waits_for_a_writer_holding_the_rollback_journal_instead_of_failing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Several processes creating the database together: one is still writing in the
    # default rollback-journal mode when another asks for WAL. SQLite answers that
    # "database is locked" at once, without running the busy handler.
    import sqlite3

    path = tmp_path / "memfold.sqlite3"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("CREATE TABLE other_tool (x)")
    pauses: list[float] = []

    def pause(seconds: float) -> None:  # the store backs off: let the writer finish then
        pauses.append(seconds)
        if writer.in_transaction:
            writer.execute("COMMIT")

    monkeypatch.setattr("memfold.store.sqlite._sleep", pause)
    store = SqliteStore(path, busy_timeout_seconds=5)
    writer.close()
    assert pauses != []
    assert store.commit(Scope("a"), MemoryDocument(), expected_revision=0).revision == 1
    store.close()


def test_wal_switch_that_stays_locked_gives_up_after_the_busy_timeout_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    path = tmp_path / "memfold.sqlite3"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("CREATE TABLE other_tool (x)")
    now = [0.0]

    def pause(seconds: float) -> None:
        now[0] += seconds

    monkeypatch.setattr("memfold.store.sqlite._sleep", pause)
    monkeypatch.setattr("memfold.store.sqlite._monotonic", lambda: now[0])
    with pytest.raises(StorageError, match=r"memfold\.sqlite3.*locked"):
        SqliteStore(path, busy_timeout_seconds=2)
    assert 2 <= now[0] < 3
    writer.close()


@pytest.mark.parametrize("kwargs", [{"busy_timeout_seconds": 0}, {"max_idle_connections": -1}])
def test_sqlite_rejects_bad_pool_settings(tmp_path: Path, kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        SqliteStore(tmp_path / "db.sqlite3", **kwargs)  # type: ignore[arg-type]
