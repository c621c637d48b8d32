"""Erasing a user's folder from the JSON store so that nothing of it stays on disk.

The folder is first renamed (atomically) to a random name under ``users/``, then
deleted. A crash midway leaves a folder whose name says nothing about the user, and the
next erasure deletes it first; listings skip dot-folders, so it is never read as memory.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

from memfold.errors import StorageError

__all__ = ["ERASING_PREFIX", "erase_folder", "remove_erased"]

#: Name prefix of a user folder being erased.
ERASING_PREFIX = ".erasing-"


def remove_erased(users: Path, *, sync: Callable[[Path], None]) -> None:
    """Delete folders an earlier erasure renamed but did not finish deleting.

    Raises:
        StorageError: one cannot be deleted (the message names it).
    """
    try:
        leftovers = [p for p in users.iterdir() if p.name.startswith(ERASING_PREFIX)]
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(f"cannot list {users}: {exc.strerror}") from exc
    for trash in leftovers:
        try:
            shutil.rmtree(trash)
        except OSError as exc:
            raise StorageError(
                f"cannot delete {trash}, the data of an erased user: {exc.strerror}; "
                "delete it by hand"
            ) from exc
    if leftovers:
        sync(users)


def erase_folder(users: Path, folder: Path, *, sync: Callable[[Path], None]) -> None:
    """Rename ``folder`` (a user's, under ``users``) out of the way, then delete it.

    Raises:
        StorageError: it could not be renamed (nothing was deleted) or deleted.
    """
    remove_erased(users, sync=sync)
    if not folder.is_dir():
        return
    trash = users / f"{ERASING_PREFIX}{secrets.token_hex(8)}"
    try:
        os.rename(folder, trash)
        sync(users)
    except OSError as exc:
        raise StorageError(f"cannot erase {folder}: {exc.strerror}; nothing was deleted") from exc
    remove_erased(users, sync=sync)
