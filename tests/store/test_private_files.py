"""S11: every store keeps its files private: folders 0700, files 0600 (SQLite's WAL and
SHM and the durable queue's file included), as SECURITY.md says."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memfold import Memory, MemoryConfig


def _modes(root: Path) -> dict[str, int]:
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            path = Path(folder) / name
            found[str(path.relative_to(root))] = stat.S_IMODE(path.stat().st_mode)
    return found


@pytest.mark.parametrize(
    ("storage", "queue"), [("json", "memory"), ("sqlite", "sqlite"), ("json", "sqlite")]
)
def test_files_and_folders_are_owner_only(tmp_path, storage, queue):
    old = os.umask(0o022)  # a common default umask: memfold must not depend on a strict one
    try:
        home = tmp_path / "home"
        config = MemoryConfig(home=home, storage=storage, queue=queue, debounce_seconds=0)
        with Memory(config) as mem:
            mem.add_fact("Likes tea", user_id="alice")
            mem.record([("user", "I live in Oslo."), ("assistant", "Ok.")], thread_id="t")
            mem.flush(10)
            modes = _modes(tmp_path)
    finally:
        os.umask(old)
    assert modes["home"] == 0o700
    names = set(modes)
    if storage == "sqlite":
        assert {
            "home/memfold.sqlite3",
            "home/memfold.sqlite3-wal",
            "home/memfold.sqlite3-shm",
        } <= names
    if queue == "sqlite":
        assert {"home/memfold-queue.sqlite3", "home/memfold-queue.sqlite3-wal"} <= names
    for name, mode in modes.items():
        is_dir = (tmp_path / name).is_dir()
        assert mode == (0o700 if is_dir else 0o600), (name, oct(mode))


def test_a_database_an_older_version_left_readable_is_narrowed(tmp_path):
    home = tmp_path / "home"
    with Memory(MemoryConfig(home=home, storage="sqlite")) as mem:
        mem.add_fact("Likes tea")
    for path in home.iterdir():
        path.chmod(0o644)
    with Memory(MemoryConfig(home=home, storage="sqlite")) as mem:
        assert mem.get().facts[0].content == "Likes tea"
    for path in home.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
