"""The JSON store's history.jsonl: same-commit semantics across a crash, damage, bound."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from memfold.errors import StorageError
from memfold.history import ChangeEvent
from memfold.model import MemoryDocument, Scope
from memfold.store._history_file import HISTORY_FILE
from memfold.store.jsonfile import JsonFileStore

ALICE = Scope("alice")
AT = "2026-12-01T10:00:00Z"


def event(fact_id: str) -> ChangeEvent:
    return ChangeEvent("added", AT, "manual", fact_id=fact_id)


def ids(store: JsonFileStore) -> list[str | None]:
    return [e.fact_id for e in store.history(ALICE)]


def test_a_commit_that_dies_after_its_events_leaves_no_trace_in_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JsonFileStore(tmp_path)
    store.commit(ALICE, MemoryDocument(), expected_revision=0, events=(event("kept"),))
    real_replace = os.replace

    def crash_on_memory_json(src: Any, dst: Any) -> None:
        if str(dst).endswith("memory.json"):
            raise OSError(5, "Input/output error")
        real_replace(src, dst)

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", crash_on_memory_json)
        with pytest.raises(StorageError):
            store.commit(
                ALICE, MemoryDocument(), expected_revision=1, events=(event("ghost"), event("g2"))
            )
    path = store.folder(ALICE) / HISTORY_FILE
    assert b"ghost" in path.read_bytes()  # the lines were written before the crash ...
    assert ids(store) == ["kept"]  # ... but readers skip a commit that never landed
    store.commit(ALICE, MemoryDocument(), expected_revision=1, events=(event("next"),))
    assert ids(store) == ["next", "kept"]
    assert b"ghost" not in path.read_bytes()  # and the next commit cut them off
    assert store.load(ALICE).revision == 2


def test_a_torn_last_line_and_a_damaged_line_do_not_break_reading_or_writing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = JsonFileStore(tmp_path)
    store.commit(ALICE, MemoryDocument(), expected_revision=0, events=(event("a"),))
    store.commit(ALICE, MemoryDocument(), expected_revision=1, events=(event("b"),))
    path = store.folder(ALICE) / HISTORY_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b'{"revision":2,"kind":"nonsense"}\n' + lines[1] + b'{"revis')
    assert ids(store) == ["b", "a"]
    assert "damaged" in caplog.text
    store.commit(ALICE, MemoryDocument(), expected_revision=2, events=(event("c"),))
    assert ids(store) == ["c", "b", "a"]
    assert path.read_bytes().endswith(b"\n")


def test_the_file_stays_within_a_quarter_over_the_bound(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path, max_history_events=8)
    doc = MemoryDocument()
    for n in range(40):
        doc = store.commit(ALICE, doc, expected_revision=doc.revision, events=(event(f"f{n}"),))
        lines = (store.folder(ALICE) / HISTORY_FILE).read_bytes().count(b"\n")
        assert lines <= 10
    assert ids(store) == [f"f{n}" for n in range(39, 31, -1)]


def test_history_of_a_corrupt_document_is_still_readable(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path)
    store.commit(ALICE, MemoryDocument(), expected_revision=0, events=(event("a"),))
    store.path(ALICE).write_text("{broken", encoding="utf-8")
    assert ids(JsonFileStore(tmp_path)) == ["a"]


def test_history_lines_are_json_with_the_revision_first(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path)
    store.commit(ALICE, MemoryDocument(), expected_revision=0, events=(event("a"),))
    line = (store.folder(ALICE) / HISTORY_FILE).read_text(encoding="utf-8")
    assert line.startswith('{"revision":1,')
    assert json.loads(line)["factId"] == "a"
    assert oct((store.folder(ALICE) / HISTORY_FILE).stat().st_mode & 0o777) == "0o600"


def test_an_interrupted_erasure_is_finished_by_the_next_one(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path)
    store.commit(Scope("carol"), MemoryDocument(), expected_revision=0, events=(event("a"),))
    leftover = tmp_path / "users" / ".erasing-0123456789abcdef"
    (leftover / "agents").mkdir(parents=True)
    (leftover / "memory.json").write_text("{}", encoding="utf-8")
    assert list(store.scopes()) == [Scope("carol")]  # never read as memory
    assert store.forget_user("nobody") == 0
    assert not leftover.exists()
    assert store.forget_user("carol") == 1
    assert sorted(p.name for p in (tmp_path / "users").iterdir()) == []
