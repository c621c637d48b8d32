"""migrate(): every scope copied once; identical scopes skipped; newer targets untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from memfold.migrate import migrate
from memfold.model import Fact, MemoryDocument, Scope, Watermark, document_to_dict
from memfold.store.base import MemoryStore
from memfold.store.inmemory import InMemoryStore
from memfold.store.jsonfile import JsonFileStore
from memfold.store.sqlite import SqliteStore

SCOPES = [Scope(), Scope(None, "coder"), Scope("alice"), Scope("alice", "coder"), Scope("用户")]


def _fill(store: MemoryStore) -> None:
    for n, scope in enumerate(SCOPES):
        doc = MemoryDocument(
            facts=(Fact(id=f"fact_{n:08x}", content=f"fact {n}", category="goal"),),
            watermarks={"t1": Watermark(f"id:m{n}", "2026-01-01T00:00:00Z")},
            last_updated="2026-01-01T00:00:00Z",
        )
        store.commit(scope, doc, expected_revision=0)
    store.clear(Scope("alice"))  # a cleared scope travels too (generation 1)
    store.commit(
        Scope("alice"),
        MemoryDocument(facts=(Fact(id="fact_aaaaaaaa", content="after clear", category="goal"),)),
        expected_revision=2,
    )


def _content(store: MemoryStore, scope: Scope) -> dict[str, object]:
    data = document_to_dict(store.load(scope))
    del data["revision"], data["generation"]
    return data


def _check_copy_then_idempotent(source: MemoryStore, target: MemoryStore) -> None:
    first = migrate(source, target)
    assert sorted(map(str, first.copied)) == sorted(map(str, SCOPES))
    assert (first.identical, first.conflicts, first.failed) == ([], [], [])
    assert set(target.scopes()) == set(SCOPES)
    for scope in SCOPES:
        assert _content(target, scope) == _content(source, scope)
    second = migrate(source, target)
    assert second.copied == []
    assert sorted(map(str, second.identical)) == sorted(map(str, SCOPES))
    assert second.ok
    assert target.load(Scope("alice")).revision == 1  # the second run wrote nothing


def test_json_to_sqlite_copies_every_scope_once(tmp_path: Path) -> None:
    source = JsonFileStore(tmp_path / "home")
    _fill(source)
    target = SqliteStore(tmp_path / "home" / "memfold.sqlite3")
    _check_copy_then_idempotent(source, target)
    target.close()


def test_json_to_postgres_copies_every_scope_once(tmp_path: Path, postgres_dsn: str) -> None:
    from memfold.store.postgres import PostgresStore

    source = JsonFileStore(tmp_path / "home")
    _fill(source)
    target = PostgresStore(postgres_dsn)
    _check_copy_then_idempotent(source, target)
    target.close()


def test_target_scope_that_differs_is_a_conflict_and_left_alone_unless_overwrite() -> None:
    source, target = InMemoryStore(), InMemoryStore()
    _fill(source)
    mine = target.commit(
        Scope("alice", "coder"),
        MemoryDocument(facts=(Fact(id="fact_bbbbbbbb", content="newer", category="goal"),)),
        expected_revision=0,
    )
    report = migrate(source, target)
    assert report.conflicts == [Scope("alice", "coder")]
    assert not report.ok
    assert len(report.copied) == len(SCOPES) - 1
    assert target.load(Scope("alice", "coder")) == mine
    assert "1 conflicts" in report.summary()
    forced = migrate(source, target, overwrite=True)
    assert forced.copied == [Scope("alice", "coder")]
    assert _content(target, Scope("alice", "coder")) == _content(source, Scope("alice", "coder"))


def test_unreadable_source_scope_is_reported_and_the_rest_copied(tmp_path: Path) -> None:
    source = JsonFileStore(tmp_path / "home")
    _fill(source)
    source.path(Scope("alice")).write_text("{broken", encoding="utf-8")
    target = InMemoryStore()
    report = migrate(source, target)
    assert [scope for scope, _ in report.failed] == [Scope("alice")]
    assert "corrupt" in report.failed[0][1]
    assert len(report.copied) == len(SCOPES) - 1
    assert target.load(Scope("alice")).revision == 0


def test_cli_migrate_to_sqlite_prints_one_line_and_is_idempotent(tmp_path: Path, run) -> None:
    home = tmp_path / "home"
    _fill(JsonFileStore(home))
    code, out, err = run("--home", str(home), "migrate", "--to", "sqlite")
    assert (code, err) == (0, "")
    assert out == f"migrated to sqlite: {len(SCOPES)} scopes: {len(SCOPES)} copied, " + (
        "0 already identical, 0 conflicts, 0 failed\n"
    )
    code, out, _ = run("--home", str(home), "migrate", "--to", "sqlite")
    assert code == 0
    assert f"0 copied, {len(SCOPES)} already identical" in out
    store = SqliteStore(home / "memfold.sqlite3")
    assert set(store.scopes()) == set(SCOPES)
    store.close()


def test_cli_migrate_errors_are_one_line_with_status_2(
    tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMFOLD_DSN", raising=False)
    home = str(tmp_path / "home")
    code, _, err = run("--home", home, "migrate", "--to", "postgres")
    assert code == 2
    assert err.startswith("memfold: error: ")
    assert "dsn" in err
    assert err.count("\n") == 1
    monkeypatch.setenv("MEMFOLD_STORAGE", "sqlite")
    code, _, err = run("--home", home, "migrate", "--to", "sqlite")
    assert code == 2
    assert "already is this sqlite store" in err


def test_a_copied_scope_brings_its_change_history(tmp_path: Path) -> None:
    from memfold.history import ChangeEvent

    source = JsonFileStore(tmp_path / "json")
    doc = MemoryDocument()
    for n in range(3):
        event = ChangeEvent("added", "2026-01-01T00:00:00Z", "manual", fact_id=f"f{n}")
        doc = source.commit(Scope("alice"), doc, expected_revision=doc.revision, events=(event,))
    target = SqliteStore(tmp_path / "m.sqlite3")
    assert migrate(source, target).copied == [Scope("alice")]
    copied = target.history(Scope("alice"))
    assert [e.fact_id for e in copied] == ["f2", "f1", "f0"]
    assert {e.revision for e in copied} == {target.load(Scope("alice")).revision}
    assert migrate(source, target).identical == [Scope("alice")]
    assert len(target.history(Scope("alice"))) == 3
    target.close()
