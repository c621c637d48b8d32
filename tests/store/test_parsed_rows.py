"""SQL stores reuse a parsed document only while its stored row is unchanged."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memfold.model import Fact, MemoryDocument, Scope
from memfold.store._parsed import ParsedRows
from memfold.store.base import encode_document
from memfold.store.sqlite import SqliteStore

SCOPE = Scope("alice")


def doc(*contents: str) -> MemoryDocument:
    return MemoryDocument().with_changes(
        facts=tuple(Fact(id=f"f{i}", content=c) for i, c in enumerate(contents))
    )


#: The SQL backends (the JSON store has its own validated cache).
SQL = pytest.mark.parametrize("durable_backend", ["sqlite", "postgres"], indirect=True)


@SQL
def test_an_unchanged_row_gives_the_same_parsed_document(durable_backend: Any) -> None:
    store = durable_backend.open()
    try:
        store.commit(SCOPE, doc("Likes tea"), expected_revision=0)

        first = store.load(SCOPE)
        assert store.load(SCOPE) is first
    finally:
        store.close()


@SQL
def test_a_commit_by_another_instance_is_seen_at_once(durable_backend: Any) -> None:
    reader, writer = durable_backend.open(), durable_backend.open()
    try:
        writer.commit(SCOPE, doc("Likes tea"), expected_revision=0)
        assert [f.content for f in reader.load(SCOPE).facts] == ["Likes tea"]

        writer.commit(SCOPE, doc("Likes coffee"), expected_revision=1)
        assert [f.content for f in reader.load(SCOPE).facts] == ["Likes coffee"]

        writer.clear(SCOPE)
        assert reader.load(SCOPE).facts == ()
    finally:
        reader.close()
        writer.close()


def test_sqlite_row_rewritten_with_the_same_revision_is_parsed_again(tmp_path: Path) -> None:
    path = tmp_path / "memfold.sqlite3"
    store = SqliteStore(path)
    try:
        store.commit(SCOPE, doc("Likes tea"), expected_revision=0)
        before = store.load(SCOPE)
        text = encode_document(SCOPE, doc("Likes zig"))
        with sqlite3.connect(path) as conn:  # e.g. a scope deleted and written again
            conn.execute("UPDATE memfold_documents SET document = ?", (text,))

        after = store.load(SCOPE)

        assert after.revision == before.revision
        assert [f.content for f in after.facts] == ["Likes zig"]
    finally:
        store.close()


def test_parsed_rows_are_bounded_by_scopes_and_characters() -> None:
    rows = ParsedRows(max_scopes=3, max_chars=100)
    for i in range(5):
        rows.put(Scope(f"u{i}"), (1, 0, "x"), MemoryDocument(), 10)
    assert len(rows) == 3
    assert rows.get(Scope("u0"), (1, 0, "x")) is None
    assert rows.get(Scope("u4"), (1, 0, "x")) is not None

    rows.put(Scope("big"), (1, 0, "y"), MemoryDocument(), 60)
    rows.put(Scope("bigger"), (1, 0, "z"), MemoryDocument(), 60)
    assert rows.get(Scope("big"), (1, 0, "y")) is None  # evicted to stay within 100 chars
    rows.put(Scope("huge"), (1, 0, "w"), MemoryDocument(), 1000)
    assert rows.get(Scope("huge"), (1, 0, "w")) is None  # never cached
    assert rows.get(Scope("u4"), (2, 0, "x")) is None  # another key: not this document


def test_an_outside_edit_of_the_document_alone_is_seen_on_every_sql_store(
    sql_backend: Any,
) -> None:
    """An operator's UPDATE of the document column (revision, generation and updated_at
    kept) is read again at the next load, never served from the parsed copy."""
    store = sql_backend.open()
    try:
        store.commit(SCOPE, doc("ERASED diagnosis"), expected_revision=0)
        assert [f.content for f in store.load(SCOPE).facts] == ["ERASED diagnosis"]
        assert store.load(SCOPE) is store.load(SCOPE)  # the parsed copy is in use

        text = encode_document(SCOPE, doc("Likes hiking"))
        sql_backend.execute("UPDATE memfold_documents SET document = ?", (text,))

        assert [f.content for f in store.load(SCOPE).facts] == ["Likes hiking"]
    finally:
        store.close()


def test_an_outside_delete_and_the_same_row_written_back_are_seen(sql_backend: Any) -> None:
    store = sql_backend.open()
    try:
        store.commit(SCOPE, doc("Likes tea"), expected_revision=0)
        store.load(SCOPE)
        saved = sql_backend.execute("SELECT * FROM memfold_documents", ())
        sql_backend.execute("DELETE FROM memfold_documents", ())
        assert store.load(SCOPE).revision == 0

        columns = ", ".join("?" for _ in saved[0])
        sql_backend.execute(f"INSERT INTO memfold_documents VALUES ({columns})", saved[0])
        restored = store.load(SCOPE)
        assert (restored.revision, [f.content for f in restored.facts]) == (1, ["Likes tea"])
    finally:
        store.close()
