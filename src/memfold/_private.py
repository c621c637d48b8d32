"""Files only their owner can read: memory and queue databases, exports.

Memory holds what users said about themselves, so every folder memfold creates is
``0700`` and every file ``0600`` (SECURITY.md), whichever store writes it. SQLite gives
its ``-wal`` and ``-shm`` files the database file's permissions, so creating the
database ``0600`` before SQLite opens it covers them; files an older memfold left wider
are narrowed when opened.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path

__all__ = ["private_database", "private_dirs"]

logger = logging.getLogger("memfold")

_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def private_dirs(folder: Path, *, created: Callable[[Path], None] | None = None) -> None:
    """Create ``folder`` and missing parents ``0700`` (the umask cannot widen that);
    ``created(path)`` runs after each folder is made (the JSON store fsyncs its parent)."""
    missing: list[Path] = []
    probe = folder
    while not probe.is_dir():
        missing.append(probe)
        probe = probe.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process was first
            path.mkdir(mode=0o700)
            os.chmod(path, 0o700)  # mkdir's mode is masked by the umask; make it exact
        if created is not None:
            created(path)


def _narrow(path: Path) -> None:
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return
    if mode & 0o077:
        os.chmod(path, mode & 0o700)
        logger.info("memfold: %s was readable by others; narrowed it to owner only", path)


def private_database(path: Path) -> None:
    """Make ``path`` (a SQLite file, possibly not yet there) and its side files private.

    Raises:
        OSError: the folder or file cannot be created or changed.
    """
    private_dirs(path.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    for suffix in ("", *_SQLITE_SIDE_FILES):
        _narrow(path.with_name(path.name + suffix))
