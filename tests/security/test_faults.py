"""Unreadable files, a full disk and a failing store: clear errors, old data intact, and
the agent-facing calls (``record``/``flush``) never raise."""

from __future__ import annotations

import errno
import logging
import os
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
