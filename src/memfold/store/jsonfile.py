"""``storage: json`` — one JSON file per scope under ``home``, safe for many processes.

Layout::

    {home}/users/{user}/memory.json                  the user's shared bucket
    {home}/users/{user}/agents/{agent}/memory.json   one agent's bucket
    .../scope.json                                    the exact ids (names are one-way)
    .../history.jsonl                                 change events (``_history_file``)
    .../.lock                                         flock target for commits

``{user}``/``{agent}`` come from :func:`memfold.store._ids.encode_id`; the default user
lives in ``_default``. Commits are compare-and-set on ``revision`` under an exclusive
``flock`` (POSIX) held from the read to the rename, and a thread lock within a process.
Each write goes to a unique temp file in the same folder, is fsynced, renamed over the
old file, and the folder is fsynced, so a crash leaves the old or the new file, never a
mix. A file that does not parse is never overwritten: load, commit and clear raise
:class:`~memfold.errors.CorruptMemoryError` until a person repairs or moves it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import stat
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from memfold._private import private_dirs
from memfold.errors import ConflictError, CorruptMemoryError, StorageError
from memfold.history import ChangeEvent, stamp
from memfold.model import (
    DocumentError,
    MemoryDocument,
    Scope,
    document_from_dict,
)
from memfold.store._erase import erase_folder
from memfold.store._history_file import HISTORY_FILE, append_events, read_events
from memfold.store._ids import DEFAULT_USER_DIR, encode_id
from memfold.store.base import (
    DEFAULT_MAX_HISTORY_EVENTS,
    check_commit_args,
    check_history_limit,
    check_max_history_events,
    cleared,
    committed,
    encode_document,
    loads_strict_json,
    not_a_regular_file,
)

__all__ = ["JsonFileStore"]

log = logging.getLogger(__name__)

MEMORY_FILE = "memory.json"
SCOPE_FILE = "scope.json"
LOCK_FILE = ".lock"
#: A cached entry whose file changed this recently (wall clock) is re-checked byte for
#: byte: a coarse file-system clock plus inode reuse could otherwise hide a rewrite of
#: the same size within the same timestamp tick.
RACY_WINDOW_NS = 2_000_000_000
_THREAD_LOCK_STRIPES = 64
_EMPTY = MemoryDocument()

_StatKey = tuple[int, int, int, int]
#: Names of the temp files writes go through; a crash between write and rename leaves
#: one behind, a full copy of the document (swept under the scope's lock).
_TEMP_PREFIXES = (".memory.", ".scope.", ".history.")


@dataclass(frozen=True, slots=True)
class _Entry:
    document: MemoryDocument
    key: _StatKey
    raw: bytes | None  # kept only while the file is "racy" (recently written)


class _LRU:
    """A bounded, thread-safe map of path → cache entry (least recently used goes first)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str) -> _Entry | None:
        with self._lock:
            entry = self._items.get(path)
            if entry is not None:
                self._items.move_to_end(path)
            return entry

    def put(self, path: str, entry: _Entry) -> None:
        if self.capacity == 0:
            return
        with self._lock:
            self._items[path] = entry
            self._items.move_to_end(path)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def drop(self, path: str) -> None:
        with self._lock:
            self._items.pop(path, None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


def _stat_key(st: os.stat_result) -> _StatKey:
    # ctime too: a restore from backup can bring back the inode, size and mtime, but the
    # kernel sets ctime on every change and nobody can set it back
    return (st.st_ino, st.st_mtime_ns, st.st_size, st.st_ctime_ns)


def _fsync_dir(folder: Path) -> None:
    """Make a rename or a new entry in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:  # some file systems cannot sync a directory; nothing to do then
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _orphans(folder: Path) -> list[str]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [n for n in names if n.endswith(".tmp") and n.startswith(_TEMP_PREFIXES)]


def _has_orphans(folder: Path) -> bool:
    return bool(_orphans(folder))


def _remove_orphans(folder: Path) -> None:
    """Delete the temp files of writes that never reached their rename (call it holding
    the scope's lock, so no write in progress is touched)."""
    removed = 0
    for name in _orphans(folder):
        with contextlib.suppress(OSError):  # gone already, or not ours to remove
            os.unlink(folder / name)
            removed += 1
    if removed:
        log.info("removed %d temp file(s) a crashed write left in %s", removed, folder)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class JsonFileStore:
    """A :class:`~memfold.store.base.MemoryStore` of JSON files under ``home``.

    ``cache_size`` bounds the read cache (documents, 0 disables it); entries are
    validated by a ``stat`` on every load, so writes by other processes are seen at once.
    ``max_history_events`` bounds each scope's change history (0 keeps none).
    ``wall_clock_ns`` is injectable for tests of the cache's racy-write check.
    """

    def __init__(
        self,
        home: str | os.PathLike[str],
        *,
        cache_size: int = 1024,
        max_history_events: int = DEFAULT_MAX_HISTORY_EVENTS,
        wall_clock_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise ValueError(f"cache_size={cache_size!r}: must be a non-negative integer")
        self.max_history_events = check_max_history_events(max_history_events)
        self.home = Path(home).absolute()
        self._users = self.home / "users"
        self._cache = _LRU(cache_size)
        self._clock_ns = wall_clock_ns
        self._stripes = tuple(threading.Lock() for _ in range(_THREAD_LOCK_STRIPES))
        self._closed = False

    # --- paths ------------------------------------------------------------------------

    def folder(self, scope: Scope) -> Path:
        """The folder that holds ``scope``'s files (it may not exist yet).

        Raises:
            TypeError: ``scope`` is not a :class:`Scope`, or an id is not a string.
            ValueError: an id is empty or contains NUL.
        """
        if not isinstance(scope, Scope):
            raise TypeError(f"scope must be a Scope, got {type(scope).__name__}")
        user = DEFAULT_USER_DIR if scope.user_id is None else encode_id(scope.user_id, "user_id")
        folder = self._users / user
        if scope.agent is not None:
            folder = folder / "agents" / encode_id(scope.agent, "agent")
        return folder

    def path(self, scope: Scope) -> Path:
        """The ``memory.json`` of ``scope`` (see :meth:`folder` for what it raises)."""
        return self.folder(scope) / MEMORY_FILE

    # --- MemoryStore ------------------------------------------------------------------

    def load(self, scope: Scope) -> MemoryDocument:
        """The scope's document, or an empty one (revision 0) when no file exists.

        Raises:
            CorruptMemoryError: the file is not a valid memory document (left untouched).
            StorageError: the file cannot be read (permissions, IO error).
            TypeError, ValueError: an id is invalid.
        """
        return self._load_path(self.path(scope))

    def commit(
        self,
        scope: Scope,
        document: MemoryDocument,
        *,
        expected_revision: int,
        events: Sequence[ChangeEvent] = (),
    ) -> MemoryDocument:
        """Write ``document`` if the stored revision is still ``expected_revision``.

        The stored document has ``revision = expected_revision + 1`` and the stored
        ``generation`` (only :meth:`clear` changes it); it is returned. ``events`` go to
        the scope's ``history.jsonl`` in the same commit.

        Raises:
            ConflictError: the stored revision differs; nothing was written.
            InvalidDocumentError: ``document`` would not load back; nothing was written.
            CorruptMemoryError: the stored file does not parse; nothing was written.
            StorageError: the write failed; the previous file is intact.
            TypeError, ValueError: bad arguments or ids.
        """
        check_commit_args(document, expected_revision)
        folder = self.folder(scope)
        path = folder / MEMORY_FILE
        if expected_revision > 0 and not folder.is_dir():
            # gone (erased by forget_user): do not recreate its folder just to conflict
            raise ConflictError(scope, expected=expected_revision, actual=0)
        with self._locked(folder):
            current = self._load_path(path)
            if current.revision != expected_revision:
                raise ConflictError(scope, expected=expected_revision, actual=current.revision)
            stored = committed(document, current, expected_revision)
            self._append_history(folder, events, current.revision, stored.revision)
            self._write(scope, folder, path, stored)
            return stored

    def _append_history(
        self, folder: Path, events: Sequence[ChangeEvent], current: int, revision: int
    ) -> None:
        append_events(
            folder,
            stamp(events, revision),
            stored_revision=current,
            max_events=self.max_history_events,
            replace=self._replace,
        )

    def clear(
        self, scope: Scope, *, cleared_at: str = "", events: Sequence[ChangeEvent] = ()
    ) -> MemoryDocument:
        """Replace the scope's memory with an empty document, bumping generation and revision
        (``cleared_at``: see :meth:`MemoryStore.clear <memfold.store.base.MemoryStore.clear>`).

        A corrupt file is not cleared (move it away by hand): clearing must not be a way
        to lose data silently.

        Raises:
            CorruptMemoryError: the stored file does not parse; nothing was written.
            StorageError: the write failed; the previous file is intact.
        """
        folder = self.folder(scope)
        path = folder / MEMORY_FILE
        with self._locked(folder):
            current = self._load_path(path)
            stored = cleared(current, cleared_at)
            self._append_history(folder, events, current.revision, stored.revision)
            self._write(scope, folder, path, stored)
            return stored

    def history(self, scope: Scope, *, limit: int | None = None) -> list[ChangeEvent]:
        """The scope's change events, newest first (see :mod:`._history_file`).

        Raises:
            StorageError: the history file cannot be read.
            ValueError: ``limit`` is not a positive integer or None.
        """
        count = check_history_limit(limit, self.max_history_events)
        folder = self.folder(scope)
        try:
            revision = self._load_path(folder / MEMORY_FILE).revision
        except CorruptMemoryError:
            revision = 2**63  # the document is damaged; its history is still worth reading
        if count == 0:
            return []
        return read_events(folder / HISTORY_FILE, revision=revision, limit=count)

    def forget_user(self, user_id: str | None) -> int:
        """Delete the user's folder: every scope, its history, watermarks and lock files
        (see :func:`._erase.erase_folder`); returns how many scopes held a document.

        Raises:
            StorageError: the folder could not be renamed or deleted.
        """
        folder = self.folder(Scope(user_id))
        found = [folder, *self._subfolders(folder / "agents")]
        count = sum(1 for path in found if (path / MEMORY_FILE).is_file())
        erase_folder(self._users, folder, sync=_fsync_dir)
        for path in found:
            self._cache.drop(str(path / MEMORY_FILE))
        return count

    def scopes(self) -> Iterator[Scope]:
        """Every scope with a stored file, with its exact ids (from ``scope.json``).

        A folder whose ``scope.json`` is missing or does not match its name is skipped
        with a warning (it was not written by this store).

        Raises:
            StorageError: the store's folders cannot be listed.
        """
        for user_dir in self._subfolders(self._users):
            for folder in (user_dir, *self._subfolders(user_dir / "agents")):
                if (folder / MEMORY_FILE).is_file():
                    scope = self._scope_of(folder)
                    if scope is not None:
                        yield scope

    @staticmethod
    def _subfolders(folder: Path) -> list[Path]:
        try:
            return sorted(p for p in folder.iterdir() if p.is_dir() and p.name[:1] != ".")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"cannot list {folder}: {exc.strerror}") from exc

    def close(self) -> None:
        """Drop the read cache and refuse later writes (a worker still inside a hung model
        call when ``Memory.close`` gave up must not commit afterwards). Reads go on
        working; calling this twice is fine."""
        self._closed = True
        self._cache.clear()

    @property
    def cached_documents(self) -> int:
        """How many documents the read cache holds (at most ``cache_size``)."""
        return len(self._cache)

    # --- reading ----------------------------------------------------------------------

    def _load_path(self, path: Path) -> MemoryDocument:
        name = str(path)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._cache.drop(name)
            return _EMPTY
        except OSError as exc:
            raise StorageError(f"cannot read memory file {path}: {exc.strerror}") from exc
        if not stat.S_ISREG(st.st_mode):
            raise not_a_regular_file(path, st.st_mode, "memory file")
        key = _stat_key(st)
        entry = self._cache.get(name)
        if entry is not None and entry.key == key and entry.raw is None:
            return entry.document
        read = self._read(path)
        if read is None:
            self._cache.drop(name)
            return _EMPTY
        if entry is None:  # the first read of this scope here: sweep what a crash left
            self._sweep(path.parent)
        raw, key = read
        if entry is not None and entry.key == key and entry.raw == raw:
            document = entry.document
        else:
            document = self._parse(path, raw)
        self._remember(name, document, key, raw)
        return document

    @staticmethod
    def _read(path: Path) -> tuple[bytes, _StatKey] | None:
        """The file's bytes and stat key; None when it is gone.

        Opened without blocking and checked to be a regular file: a FIFO put in its place
        would otherwise block the open (and the caller) forever.
        """
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"cannot read memory file {path}: {exc.strerror}") from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise not_a_regular_file(path, st.st_mode, "memory file")
            with open(fd, "rb", closefd=False) as handle:
                return handle.read(), _stat_key(st)
        except OSError as exc:
            raise StorageError(f"cannot read memory file {path}: {exc.strerror}") from exc
        finally:
            os.close(fd)

    @staticmethod
    def _parse(path: Path, raw: bytes) -> MemoryDocument:
        try:
            data = loads_strict_json(raw)
        except UnicodeDecodeError as exc:
            raise CorruptMemoryError(str(path), f"not UTF-8 text ({exc.reason})") from exc
        except json.JSONDecodeError as exc:
            reason = f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
            raise CorruptMemoryError(str(path), reason) from exc
        except ValueError as exc:
            raise CorruptMemoryError(str(path), f"invalid JSON: {exc}") from exc
        except RecursionError as exc:
            raise CorruptMemoryError(str(path), "JSON nested too deeply") from exc
        try:
            return document_from_dict(data)
        except DocumentError as exc:
            raise CorruptMemoryError(str(path), str(exc)) from exc

    def _remember(self, name: str, document: MemoryDocument, key: _StatKey, raw: bytes) -> None:
        racy = key[1] >= self._clock_ns() - RACY_WINDOW_NS
        self._cache.put(name, _Entry(document, key, raw if racy else None))

    # --- writing ----------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self, folder: Path) -> Iterator[None]:
        """Hold the scope's thread stripe and its cross-process ``flock``.

        Raises:
            StorageError: the store is closed, or the lock cannot be taken.
        """
        if self._closed:
            raise StorageError(f"the JSON store under {self.home} is closed; nothing was written")
        digest = hashlib.blake2b(str(folder).encode("utf-8", "surrogatepass"), digest_size=4)
        stripe = self._stripes[int.from_bytes(digest.digest(), "big") % len(self._stripes)]
        with stripe:
            try:
                self._make_dirs(folder)
                fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as exc:
                raise StorageError(
                    f"cannot create or lock {folder}: {exc.strerror}; check that {self.home} "
                    "is writable"
                ) from exc
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except OSError as exc:
                    raise StorageError(
                        f"cannot lock {folder / LOCK_FILE}: {exc.strerror}; memfold needs a "
                        "file system with flock (not every network file system has it)"
                    ) from exc
                _remove_orphans(folder)  # every writer holds this lock: none is mid-write
                yield
            finally:
                os.close(fd)  # closing releases the flock

    def _sweep(self, folder: Path) -> None:
        """Remove temp files a crashed writer left in ``folder`` (each one a full copy of
        the document, which a delete or clear must not leave on disk), if the scope's
        lock is free right now; a busy lock means a writer, which sweeps them itself."""
        if not _has_orphans(folder):
            return
        try:
            fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return  # a read-only home: nothing can be removed anyway
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _remove_orphans(folder)
        except OSError:
            pass  # busy: the writer holding it sweeps
        finally:
            os.close(fd)

    def _make_dirs(self, folder: Path) -> None:
        if not folder.is_dir():
            private_dirs(folder, created=lambda path: _fsync_dir(path.parent))

    def _write(self, scope: Scope, folder: Path, path: Path, document: MemoryDocument) -> None:
        data = encode_document(scope, document).encode("utf-8")
        if not (folder / SCOPE_FILE).is_file():
            ids = {"userId": scope.user_id, "agent": scope.agent}
            self._replace(folder, folder / SCOPE_FILE, json.dumps(ids).encode("utf-8"))
        key = self._replace(folder, path, data)
        self._remember(str(path), document, key, data)

    @staticmethod
    def _replace(folder: Path, path: Path, data: bytes) -> _StatKey:
        """Atomically replace ``path`` with ``data``; returns the new file's stat key.

        Raises:
            StorageError: nothing was replaced (the old file is intact), or the rename
                happened but the folder could not be synced (said in the message).
        """
        tmp: str | None = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=folder)
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
            tmp = None
            key = _stat_key(os.stat(path))  # after the rename, which sets the ctime

        except OSError as exc:
            raise StorageError(
                f"cannot write {path}: {exc.strerror or exc}; the previous version is intact"
            ) from exc
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        try:
            _fsync_dir(folder)
        except OSError as exc:
            raise StorageError(
                f"wrote {path} but could not sync its folder: {exc.strerror}; "
                "the new version may not survive a power loss"
            ) from exc
        return key

    def _scope_of(self, folder: Path) -> Scope | None:
        ids_path = folder / SCOPE_FILE
        if not ids_path.is_file():  # missing, or a FIFO that would block the read
            log.warning("skipping %s: %s is missing or not a regular file", folder, SCOPE_FILE)
            return None
        try:
            ids = json.loads(ids_path.read_bytes())
            scope = Scope(user_id=ids["userId"], agent=ids["agent"])
            matches = self.folder(scope) == folder
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.warning("skipping %s: unreadable %s (%s)", folder, SCOPE_FILE, exc)
            return None
        if not matches:
            log.warning("skipping %s: %s names another scope (%s)", folder, SCOPE_FILE, scope)
            return None
        return scope
