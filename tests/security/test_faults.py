"""Unreadable files, a full disk and a failing store: clear errors, old data intact, and
the agent-facing calls (``record``/``flush``) never raise."""

from __future__ import annotations

import errno
import logging
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import pytest

from memfold import Memory, MemoryConfig, edits
from memfold.errors import StorageError
from memfold.model import MemoryDocument, Scope
from memfold.store import jsonfile
from memfold.store.jsonfile import JsonFileStore
from memfold.testing import InMemoryStore

SCOPE = Scope("u", None)
NOW = datetime(2026, 1, 1, tzinfo=UTC)
CHAT = [
    {"role": "user", "content": "I work as a nurse in Porto."},
    {"role": "assistant", "content": "Thanks, noted."},
]


def _seeded(tmp_path: Path) -> tuple[JsonFileStore, Path, bytes]:
    store = JsonFileStore(tmp_path)
    doc, _ = edits.add_fact(MemoryDocument(), "Likes tea", now=NOW)
    store.commit(SCOPE, doc, expected_revision=0)
    path = store.path(SCOPE)
    return store, path, path.read_bytes()


def _denied(*args: Any, **kwargs: Any) -> NoReturn:
    raise PermissionError(errno.EACCES, "Permission denied", str(args[0]))


def test_unreadable_memory_file_raises_storage_error_naming_path_and_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, path, _ = _seeded(tmp_path)
    monkeypatch.setattr(jsonfile, "open", _denied, raising=False)  # chmod 000 as root
    with pytest.raises(StorageError) as caught:
        JsonFileStore(tmp_path, cache_size=0).load(SCOPE)
    assert str(path) in str(caught.value)
    assert "Permission denied" in str(caught.value)


@pytest.mark.parametrize("syscall", ["write", "fsync"])
def test_full_disk_leaves_the_previous_file_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, syscall: str
) -> None:
    store, path, before = _seeded(tmp_path)
    doc = store.load(SCOPE)
    changed, _ = edits.add_fact(doc, "Likes coffee", now=NOW)

    def full(*args: Any) -> NoReturn:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patch:
        patch.setattr(os, syscall, full)
        with pytest.raises(StorageError) as caught:
            store.commit(SCOPE, changed, expected_revision=doc.revision)
    assert str(path) in str(caught.value)
    assert "No space left on device" in str(caught.value)
    assert "previous version is intact" in str(caught.value)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir() if p.suffix == ".tmp"] == []
    assert JsonFileStore(tmp_path, cache_size=0).load(SCOPE).revision == doc.revision


class _FailingStore(InMemoryStore):
    """Loads work; every commit raises what it was given."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def commit(
        self, scope: Scope, document: MemoryDocument, *, expected_revision: int, events: Any = ()
    ) -> Any:
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        StorageError("cannot write /srv/mem/memory.json: No space left on device"),
        OSError(errno.EIO, "Input/output error"),
        RuntimeError("driver bug"),
    ],
)
def test_store_failures_never_reach_the_agent_through_record_and_flush(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, error: Exception
) -> None:
    caplog.set_level(logging.ERROR, logger="memfold")
    config = MemoryConfig(home=tmp_path, retry_attempts=2, extractor="rules")
    with Memory(config, store=_FailingStore(error), start_workers=False) as mem:
        assert mem.record(CHAT, thread_id="t1", user_id="u") is True
        assert mem.flush(timeout=10) is True
        status = mem.status()
    assert status.failed == 2
    assert status.dropped == 1
    assert status.last_error is not None
    assert str(error) in status.last_error
    assert "dropped" in caplog.text


def test_a_full_disk_during_a_background_update_keeps_memory_and_the_agent_going(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, path, before = _seeded(tmp_path)
    config = MemoryConfig(home=tmp_path, retry_attempts=1, extractor="rules")
    with Memory(config, start_workers=False) as mem:
        mem.record(CHAT, thread_id="t1", user_id="u")

        def full(*args: Any) -> NoReturn:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        with monkeypatch.context() as patch:
            patch.setattr(os, "fsync", full)
            assert mem.flush(timeout=10) is True
        assert mem.status().dropped == 1
        assert "No space left on device" in (mem.status().last_error or "")
        assert "Likes tea" in mem.context(user_id="u")
    assert path.read_bytes() == before


def _within(seconds: float, call: Any) -> Any:
    """Run ``call`` in a thread; fail (instead of hanging the suite) if it blocks."""
    import threading

    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(("ok", call()))
        except BaseException as exc:
            outcome.append(("error", exc))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"the call blocked for more than {seconds}s"
    kind, value = outcome[0]
    if kind == "error":
        raise value
    return value


def test_a_fifo_in_place_of_a_memory_file_is_an_error_not_a_hang(tmp_path: Path) -> None:
    """D20: open() on a FIFO used to block context() and add_fact() forever."""
    store = JsonFileStore(tmp_path)
    path = store.path(SCOPE)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    with Memory(home=tmp_path, start_workers=False) as mem:
        for call in (
            lambda: mem.context(user_id="u"),
            lambda: mem.add_fact("Likes tea", user_id="u"),
            lambda: mem.clear(user_id="u"),
        ):
            with pytest.raises(StorageError, match="is a FIFO, not a regular file"):
                _within(5, call)


def test_a_fifo_in_place_of_scope_json_is_skipped_when_listing(tmp_path: Path) -> None:
    store, path, _ = _seeded(tmp_path)
    (path.parent / "scope.json").unlink()
    os.mkfifo(path.parent / "scope.json")
    assert _within(5, lambda: list(store.scopes())) == []


@pytest.mark.parametrize("name", ["memfold.sqlite3", "memfold-queue.sqlite3"])
def test_a_fifo_in_place_of_a_sqlite_file_is_an_error_not_a_hang(tmp_path: Path, name: str) -> None:
    tmp_path.joinpath("home").mkdir()
    os.mkfifo(tmp_path / "home" / name)
    with pytest.raises(StorageError, match=r"is a FIFO, not a regular file; .*move it away"):
        _within(5, lambda: Memory(home=tmp_path / "home", storage="sqlite", queue="sqlite"))


def test_orphaned_temp_files_are_removed_on_the_next_write_and_on_open(tmp_path: Path) -> None:
    """D9: a writer killed between mkstemp and rename left a full copy of the document."""
    store, path, _ = _seeded(tmp_path)
    folder = path.parent
    for i in range(3):
        (folder / f".memory.orphan{i}.tmp").write_text('{"facts":[{"content":"SENSITIVE"}]}')
    (folder / ".scope.orphan.tmp").write_text("{}")
    (folder / "notes.tmp").write_text("not ours")
    JsonFileStore(tmp_path).load(SCOPE)  # a fresh process opening the scope sweeps
    assert sorted(p.name for p in folder.iterdir() if p.suffix == ".tmp") == ["notes.tmp"]
    (folder / ".memory.orphan.tmp").write_text("SENSITIVE")
    doc = store.load(SCOPE)  # cached here: no sweep on this read...
    store.commit(SCOPE, edits.delete_fact(doc, doc.facts[0].id), expected_revision=doc.revision)
    assert not (folder / ".memory.orphan.tmp").exists()  # ...but every write sweeps
    (folder / ".memory.orphan.tmp").write_text("SENSITIVE")
    store.clear(SCOPE)
    leftovers = [p for p in folder.iterdir() if p.is_file() and p.name != "notes.tmp"]
    assert all("SENSITIVE" not in p.read_text() for p in leftovers)


@pytest.mark.parametrize("storage", ["json", "sqlite"])
def test_context_never_serves_a_scope_erased_outside_memfold(tmp_path: Path, storage: str) -> None:
    """D8: after an operator erased a scope, revisions restarted and the render cache
    served the erased block again."""
    import shutil
    import sqlite3

    with Memory(home=tmp_path, storage=storage, start_workers=False) as mem:
        mem.add_fact("ERASED medical condition", user_id="alice")
        assert "ERASED" in mem.context(user_id="alice")
        if storage == "json":
            shutil.rmtree(JsonFileStore(tmp_path).folder(Scope("alice")))
        else:
            with sqlite3.connect(tmp_path / "memfold.sqlite3") as conn:
                conn.execute("DELETE FROM memfold_documents")
        mem.add_fact("Likes hiking", user_id="alice")
        block = mem.context(user_id="alice")
    assert "Likes hiking" in block
    assert "ERASED" not in block


def test_context_after_a_restore_from_backup_shows_the_restored_memory(tmp_path: Path) -> None:
    with Memory(home=tmp_path, start_workers=False) as mem:
        mem.add_fact("Fact A", user_id="alice")
        path = JsonFileStore(tmp_path).path(Scope("alice"))
        backup, stamp = path.read_bytes(), path.stat()
        mem.add_fact("Fact C", user_id="alice")
        assert "Fact C" in mem.context(user_id="alice")
        path.write_bytes(backup)  # restored in place, old mtime and all (cp -p)
        os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        assert "Fact C" not in mem.context(user_id="alice")
        mem.add_fact("Fact D", user_id="alice")  # the same revision C had
        block = mem.context(user_id="alice")
    assert "Fact D" in block
    assert "Fact C" not in block


def test_a_worker_hung_past_close_cannot_commit_afterwards(tmp_path: Path) -> None:
    """Observation in the findings: close() returned within its budget while a worker was
    still inside a hung model call, and that thread could still commit to the JSON store."""
    import threading

    from memfold.extract.base import ChangeSet, Extraction, ExtractionRequest, NewFact

    entered, release = threading.Event(), threading.Event()

    class Hung:
        name = "hung"

        def propose(self, request: ExtractionRequest) -> Extraction:
            entered.set()
            release.wait(10)
            return Extraction(ChangeSet(new_facts=(NewFact("Works nights", "context", 0.9),)))

    mem = Memory(home=tmp_path, extractor=Hung(), debounce_seconds=0, workers=1)
    mem.record(CHAT, thread_id="t", user_id="u")
    assert entered.wait(10)
    assert mem.close(0.2) is False  # gave up on the hung job
    release.set()
    deadline = time.monotonic() + 10
    while mem.status().failed == 0:  # the worker finishes its call; its commit is refused
        assert time.monotonic() < deadline
        threading.Event().wait(0.01)
    assert "is closed" in (mem.status().last_error or "")
    assert not JsonFileStore(tmp_path).path(SCOPE).exists()


def test_a_corrupt_memory_file_is_not_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Newcomer finding 18: a CorruptMemoryError was retried 3 times; it cannot succeed."""
    _, path, _ = _seeded(tmp_path)
    path.write_text("{not json", encoding="utf-8")
    config = MemoryConfig(home=tmp_path, extractor="rules", retry_attempts=3)
    with Memory(config, start_workers=False) as mem, caplog.at_level(logging.ERROR):
        assert mem.record(CHAT, thread_id="t1", user_id="u")
        assert mem.flush(10)
        status = mem.status()
    assert (status.failed, status.retried, status.dropped) == (1, 0, 1)
    assert "not retryable" in caplog.text
    assert path.read_text(encoding="utf-8") == "{not json"
