"""The JSON store's change history: ``history.jsonl`` beside each ``memory.json``.

One event per line, ``{"revision":N,...}`` with the revision first. A commit appends its
events (fsynced) *before* it renames the new ``memory.json`` into place, both under the
scope's lock. A crash between the two leaves lines whose revision is newer than the
stored document: readers skip them, and the next commit cuts them off before appending
(it rewrites the file through a temp file and a rename). So the history always matches
the document. The file is compacted to the newest ``max_history_events`` lines when it
grows a quarter past that; readers never return more than the bound.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from memfold.errors import StorageError
from memfold.history import ChangeEvent

__all__ = ["HISTORY_FILE", "append_events", "read_events"]

log = logging.getLogger("memfold.store")

HISTORY_FILE = "history.jsonl"
_REVISION = re.compile(rb'\{"revision":(\d{1,19}),')

Replace = Callable[[Path, Path, bytes], object]


def _encode(event: ChangeEvent) -> bytes:
    try:
        text = json.dumps(
            event.to_dict(), ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise StorageError(f"cannot serialise a change event: {exc}") from exc
    return text.encode("utf-8", "replace") + b"\n"  # a lone surrogate never fails a commit


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""
    except OSError as exc:
        raise StorageError(f"cannot read the change history {path}: {exc.strerror}") from exc


def _valid(raw: bytes, revision: int) -> tuple[int, int]:
    """(byte length, line count) of the part of ``raw`` that belongs to ``revision`` or
    earlier: a torn last line and lines of a commit that never landed are cut off."""
    end = len(raw) if raw.endswith(b"\n") else raw.rfind(b"\n") + 1
    while end > 0:
        start = raw.rfind(b"\n", 0, end - 1) + 1
        found = _REVISION.match(raw, start, end)
        if found is not None and int(found.group(1)) <= revision:
            break
        end = start
    return end, raw.count(b"\n", 0, end)


def append_events(
    folder: Path,
    events: Sequence[ChangeEvent],
    *,
    stored_revision: int,
    max_events: int,
    replace: Replace,
) -> None:
    """Append ``events`` (already stamped with the new revision) to the scope's history;
    ``stored_revision`` is the revision of the document on disk now. Call under the
    scope's lock, before the document is written.

    Raises:
        StorageError: the history could not be written; the document is not written
            either, so both stay as they were.
    """
    if not events or max_events <= 0:
        return
    path = folder / HISTORY_FILE
    lines = [_encode(event) for event in events]
    raw = _read(path)
    end, count = _valid(raw, stored_revision)
    total = count + len(lines)
    if raw and end == len(raw) and total <= max_events + max(1, max_events // 4):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            try:
                data = memoryview(b"".join(lines))
                while data:
                    data = data[os.write(fd, data) :]
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StorageError(
                f"cannot append to the change history {path}: {exc.strerror}; "
                "the memory is unchanged"
            ) from exc
        return
    kept = raw[:end].splitlines(keepends=True) + lines
    replace(folder, path, b"".join(kept[-max_events:]))


def read_events(path: Path, *, revision: int, limit: int) -> list[ChangeEvent]:
    """The newest ``limit`` events of a history file, newest first, skipping lines newer
    than the document's ``revision`` (a commit that never landed) and damaged lines
    (logged: the history must never make a memory unreadable).

    Raises:
        StorageError: the file cannot be read.
    """
    raw = _read(path)
    end, _ = _valid(raw, revision)
    events: list[ChangeEvent] = []
    damaged = 0
    for line in reversed(raw[:end].splitlines()):
        if len(events) >= limit:
            break
        try:
            events.append(ChangeEvent.from_dict(json.loads(line)))
        except (ValueError, RecursionError):
            damaged += 1
    if damaged:
        log.warning("skipped %d damaged line(s) of the change history %s", damaged, path)
    return events
