"""The SQLite store serves an unchanged scope without a query (``PRAGMA data_version``),
and never a document that changed or vanished underneath it (DESIGN.md rule 10)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from memfold.errors import StorageError
from memfold.model import Fact, MemoryDocument, Scope
from memfold.store.sqlite import SqliteStore

SCOPE = Scope("alice")


def doc(*contents: str) -> MemoryDocument:
    return MemoryDocument(facts=tuple(Fact(f"fact_{i}", c) for i, c in enumerate(contents)))


class Counting:
    """Counts the connections a store takes from its pool (one per query batch)."""

    def __init__(self, store: SqliteStore) -> None:
        self.taken = 0
        self._inner = store._connection
        store._connection = self  # type: ignore[method-assign]

    def __call__(self) -> AbstractContextManager[Any]:
        self.taken += 1
        return self._inner()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    with_store = SqliteStore(tmp_path / "memfold.sqlite3")
    yield with_store
    with_store.close()


def test_an_unchanged_scope_is_served_without_a_query(store: SqliteStore) -> None:
    store.commit(SCOPE, doc("Likes tea"), expected_revision=0)
    first = store.load(SCOPE)
    counting = Counting(store)
    for _ in range(100):
        assert store.load(SCOPE) is first
    assert counting.taken == 0


def test_a_commit_by_another_store_on_the_file_is_seen(store: SqliteStore, tmp_path: Path) -> None:
    store.commit(SCOPE, doc("Likes tea"), expected_revision=0)
    assert store.load(SCOPE).facts[0].content == "Likes tea"
    other = SqliteStore(tmp_path / "memfold.sqlite3")
    try:
        other.commit(SCOPE, doc("Likes coffee"), expected_revision=1)
    finally:
        other.close()
    assert store.load(SCOPE).facts[0].content == "Likes coffee"


def test_an_outside_edit_that_keeps_the_revision_is_seen(
    store: SqliteStore, tmp_path: Path
) -> None:
    store.commit(SCOPE, doc("ERASED diagnosis"), expected_revision=0)
    assert store.load(SCOPE).facts[0].content == "ERASED diagnosis"
    with sqlite3.connect(tmp_path / "memfold.sqlite3") as conn:
        (text,) = conn.execute("SELECT document FROM memfold_documents").fetchone()
        data = json.loads(text)
        data["facts"][0]["content"] = "Likes hiking"
        conn.execute("UPDATE memfold_documents SET document = ?", (json.dumps(data),))
    assert store.load(SCOPE).facts[0].content == "Likes hiking"


def test_an_outside_delete_is_seen_and_the_same_revision_later_is_not_confused(
    store: SqliteStore, tmp_path: Path
) -> None:
    store.commit(SCOPE, doc("ERASED diagnosis"), expected_revision=0)
    store.load(SCOPE)
    with sqlite3.connect(tmp_path / "memfold.sqlite3") as conn:
        conn.execute("DELETE FROM memfold_documents")
    assert store.load(SCOPE).revision == 0
    store.commit(SCOPE, doc("Likes hiking"), expected_revision=0)  # revision 1 again
    assert [f.content for f in store.load(SCOPE).facts] == ["Likes hiking"]


def test_own_commits_and_erasures_are_seen_at_once(store: SqliteStore) -> None:
    store.commit(SCOPE, doc("Likes tea"), expected_revision=0)
    store.load(SCOPE)
    store.commit(SCOPE, doc("Likes tea", "Has a cat"), expected_revision=1)
    assert len(store.load(SCOPE).facts) == 2
    store.forget_user("alice")
    assert store.load(SCOPE).revision == 0


def test_a_closed_store_never_serves_from_its_cache(store: SqliteStore) -> None:
    store.commit(SCOPE, doc("Likes tea"), expected_revision=0)
    store.load(SCOPE)
    store.close()
    with pytest.raises(StorageError, match="closed"):
        store.load(SCOPE)
