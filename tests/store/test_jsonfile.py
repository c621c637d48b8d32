"""JsonFileStore specifics: hostile ids, corrupt files, atomic writes, the read cache,
and compare-and-set across processes."""

from __future__ import annotations

import errno
import json
import logging
import multiprocessing
import os
from pathlib import Path

import pytest

import memfold.store.jsonfile as jsonfile
from memfold.errors import ConflictError, CorruptMemoryError, StorageError
from memfold.model import Fact, MemoryDocument, Scope, document_to_dict
from memfold.store.jsonfile import RACY_WINDOW_NS, JsonFileStore

HOSTILE_IDS = [
    "Alice",
    "alice",
    "ALICE",
    "a/b",
    "a_b",
    "a%2Fb",
    "a\\b",
    "..",
    ".",
    "...",
    "../../etc",
    "../../../../../../tmp/escape",
    "/abs",
    "/",
    "C:\\x",
    "\\\\server\\share",
    "con",
    "-rf",
    " ",
    "x" * 300,
    "x" * 299 + "y",
    "X" * 300,
    "😀",
    "😃",
    "用户",
    "alice@example.com",
    "Alice@Example.com",
    "line\nbreak",
    "_default",
    "default",
]


def _fact(n: int) -> Fact:
    return Fact(id=f"fact_{n:08x}", content=f"fact {n}", category="context")


def _files_under(root: Path) -> list[Path]:
    return [Path(d) / f for d, _, files in os.walk(root) for f in files]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def store(home: Path) -> JsonFileStore:
    return JsonFileStore(home)


# --- ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize("as_agent", [False, True], ids=["user", "agent"])
def test_hostile_ids_stay_under_home_and_never_share_a_file(
    store: JsonFileStore, home: Path, tmp_path: Path, as_agent: bool
) -> None:
    scopes = [Scope("u", i) if as_agent else Scope(i) for i in HOSTILE_IDS]
    for n, scope in enumerate(scopes):
        store.commit(scope, MemoryDocument(facts=(_fact(n),)), expected_revision=0)
    paths = [store.path(s) for s in scopes]
    assert len({str(p).lower() for p in paths}) == len(paths)  # case-insensitive file systems
    for path in paths:
        assert path.resolve().is_relative_to(home.resolve())
        assert len(path.parent.name.encode()) <= 100
    for n, scope in enumerate(scopes):
        assert store.load(scope).facts == (_fact(n),)
    assert set(store.scopes()) == set(scopes)
    assert all(p.is_relative_to(home) for p in _files_under(tmp_path))
    assert not (tmp_path / "etc").exists()


def test_default_user_folder_is_distinct_from_ids_that_look_like_it(store: JsonFileStore) -> None:
    names = {
        store.folder(Scope(None)),
        store.folder(Scope("_default")),
        store.folder(Scope("default")),
    }
    assert len(names) == 3


@pytest.mark.parametrize(("scope", "word"), [(Scope(""), "user_id"), (Scope("a", ""), "agent")])
def test_empty_id_is_rejected_with_a_clear_message(
    store: JsonFileStore, scope: Scope, word: str
) -> None:
    with pytest.raises(ValueError, match=f"{word} must not be empty"):
        store.load(scope)


def test_nul_in_an_id_is_rejected_naming_the_id(store: JsonFileStore, home: Path) -> None:
    with pytest.raises(ValueError, match=r"'a\\x00b' contains a NUL"):
        store.commit(Scope("a\x00b"), MemoryDocument(), expected_revision=0)
    assert not home.exists()


def test_non_string_id_is_a_type_error(store: JsonFileStore) -> None:
    with pytest.raises(TypeError, match="user_id must be a string"):
        store.load(Scope(42))  # type: ignore[arg-type]


# --- corrupt files -----------------------------------------------------------------------

CORRUPT = {
    "truncated": b'{"version":"1.0","facts":[{"id":"f1","content":"x"',
    "json_list": b"[1, 2, 3]",
    "string_confidence": json.dumps(
        {"facts": [{"id": "f1", "content": "x", "confidence": "high"}]}
    ).encode(),
    "not_utf8": b'{"facts": "\xff\xfe"}',
    "empty_file": b"",
    # json.loads accepts these, but no commit could write them back (strict JSON)
    "nan_in_an_unknown_field": b'{"facts": [], "custom": NaN}',
    "infinity_in_an_unknown_field": b'{"custom": {"x": [-Infinity]}}',
}


@pytest.mark.parametrize("raw", CORRUPT.values(), ids=CORRUPT.keys())
def test_corrupt_file_raises_naming_the_path_and_is_never_overwritten(
    store: JsonFileStore, raw: bytes
) -> None:
    scope = Scope("alice")
    path = store.path(scope)
    path.parent.mkdir(parents=True)
    path.write_bytes(raw)
    with pytest.raises(CorruptMemoryError) as caught:
        store.load(scope)
    assert caught.value.path == str(path)
    assert str(path) in str(caught.value)
    with pytest.raises(CorruptMemoryError):
        store.commit(scope, MemoryDocument(facts=(_fact(1),)), expected_revision=0)
    with pytest.raises(CorruptMemoryError):
        store.clear(scope)
    assert path.read_bytes() == raw
    assert {p.name for p in _files_under(path.parent)} == {"memory.json", ".lock"}


def test_string_confidence_reason_names_the_field(store: JsonFileStore) -> None:
    path = store.path(Scope("alice"))
    path.parent.mkdir(parents=True)
    path.write_bytes(CORRUPT["string_confidence"])
    with pytest.raises(CorruptMemoryError, match=r"facts\[0\]\.confidence"):
        store.load(Scope("alice"))


V1_REFERENCE = {
    "version": "1.0",
    "lastUpdated": "2025-06-01T08:00:00Z",
    "user": {
        "workContext": {"summary": "Backend engineer at a fintech", "updatedAt": "2025-06-01"},
        "personalContext": {"summary": "喜欢简洁的回答", "updatedAt": "2025-05-30"},
        "topOfMind": {"summary": "Migrating to PostgreSQL 17", "updatedAt": "2025-06-01"},
    },
    "history": {
        "recentMonths": {"summary": "Evaluated three ORMs", "updatedAt": "2025-05-01"},
        "earlierContext": {"summary": "", "updatedAt": ""},
        "longTermBackground": {"summary": "Ten years of Java", "updatedAt": "2024-01-01"},
    },
    "facts": [
        {
            "id": "fact_9f8e7d6c",
            "content": "Uses Neovim",
            "category": "preference",
            "confidence": 0.92,
            "createdAt": "2025-05-01T10:00:00Z",
            "source": "thread-17",
            "embeddingHint": "editor",
        }
    ],
    "uiSettings": {"collapsed": True},
}


def test_reference_v1_file_loads_unchanged_and_keeps_its_extra_fields(store: JsonFileStore) -> None:
    scope = Scope("alice")
    path = store.path(scope)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(V1_REFERENCE, ensure_ascii=False, indent=2), encoding="utf-8")
    doc = store.load(scope)
    assert (doc.revision, doc.generation) == (0, 0)
    assert doc.summary("personalContext") == "喜欢简洁的回答"
    assert doc.facts[0].confidence == 0.92
    store.commit(scope, doc, expected_revision=0)
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written["uiSettings"] == {"collapsed": True}
    assert written["facts"][0]["embeddingHint"] == "editor"
    assert written["revision"] == 1
    for key in ("lastUpdated", "user", "history"):
        assert written[key] == V1_REFERENCE[key]


def test_file_is_compact_utf8_json(store: JsonFileStore) -> None:
    store.commit(
        Scope("alice"), MemoryDocument(facts=(Fact("f1", "用户喜欢茶"),)), expected_revision=0
    )
    raw = store.path(Scope("alice")).read_bytes()
    assert "用户喜欢茶".encode() in raw
    assert b"\n" not in raw
    assert b", " not in raw


# --- atomic writes -----------------------------------------------------------------------


def test_successful_commit_leaves_no_temp_file(store: JsonFileStore) -> None:
    scope = Scope("alice", "coder")
    for rev in range(3):
        store.commit(scope, MemoryDocument(facts=(_fact(rev),)), expected_revision=rev)
    assert sorted(p.name for p in store.folder(scope).iterdir()) == [
        ".lock",
        "memory.json",
        "scope.json",
    ]


def _fail_replace(src: object, dst: object) -> None:
    raise OSError(errno.EIO, "simulated rename failure")


def _fail_write(fd: int, data: bytes) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize(
    ("target", "replacement"),
    [(os, ("replace", _fail_replace)), (jsonfile, ("_write_all", _fail_write))],
    ids=["replace", "write"],
)
def test_failed_write_keeps_old_file_raises_storage_error_and_cleans_up(
    store: JsonFileStore,
    monkeypatch: pytest.MonkeyPatch,
    target: object,
    replacement: tuple[str, object],
) -> None:
    scope = Scope("alice")
    old = store.commit(scope, MemoryDocument(facts=(_fact(1),)), expected_revision=0)
    before = store.path(scope).read_bytes()
    monkeypatch.setattr(target, *replacement)
    with pytest.raises(StorageError, match="previous version is intact") as caught:
        store.commit(scope, old.with_changes(facts=(_fact(2),)), expected_revision=1)
    monkeypatch.undo()
    assert not isinstance(caught.value, ConflictError | CorruptMemoryError)
    assert isinstance(caught.value.__cause__, OSError)
    assert store.path(scope).read_bytes() == before
    assert not [p for p in store.folder(scope).iterdir() if p.suffix == ".tmp"]
    assert store.load(scope) == old
    assert JsonFileStore(store.home).load(scope) == old


def test_unreadable_file_raises_storage_error_naming_the_path(store: JsonFileStore) -> None:
    path = store.path(Scope("alice"))
    path.mkdir(parents=True)  # a directory where the file should be
    with pytest.raises(StorageError, match=str(path)) as caught:
        store.load(Scope("alice"))
    assert "a directory, not a regular file" in str(caught.value)


def test_unwritable_home_raises_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "home"
    blocker.write_text("not a folder")
    with pytest.raises(StorageError, match="cannot create or lock"):
        JsonFileStore(blocker).commit(Scope("a"), MemoryDocument(), expected_revision=0)
    assert blocker.read_text() == "not a folder"


def test_file_system_without_locks_is_a_storage_error_naming_the_lock_file(
    store: JsonFileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(jsonfile.fcntl, "flock", no_locks)
    lock = store.folder(Scope("alice")) / ".lock"
    with pytest.raises(StorageError, match=f"{lock}.*lock") as caught:
        store.commit(Scope("alice"), MemoryDocument(), expected_revision=0)
    assert isinstance(caught.value.__cause__, OSError)
    assert not store.path(Scope("alice")).exists()


# --- read cache --------------------------------------------------------------------------


class _Clock:
    def __init__(self, now_ns: int) -> None:
        self.now_ns = now_ns

    def __call__(self) -> int:
        return self.now_ns


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    reads: list[Path] = []
    real = JsonFileStore._read

    def counting(path: Path) -> tuple[bytes, tuple[int, int, int]] | None:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(JsonFileStore, "_read", staticmethod(counting))
    return reads


def test_settled_cached_document_is_served_from_a_stat_alone(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = _Clock(0)
    store = JsonFileStore(home, wall_clock_ns=clock)
    scope = Scope("alice")
    committed = store.commit(scope, MemoryDocument(facts=(_fact(1),)), expected_revision=0)
    clock.now_ns = os.stat(store.path(scope)).st_mtime_ns + RACY_WINDOW_NS + 1
    reads = _count_reads(monkeypatch)
    first = store.load(scope)  # racy entry: verified once, then settled
    second = store.load(scope)
    third = store.load(scope)
    assert first is committed
    assert second is committed
    assert third is committed
    assert len(reads) == 1


def test_another_instance_writing_invalidates_the_cache(home: Path) -> None:
    reader, writer = JsonFileStore(home), JsonFileStore(home)
    scope = Scope("alice")
    writer.commit(scope, MemoryDocument(facts=(_fact(1),)), expected_revision=0)
    assert reader.load(scope).revision == 1
    writer.commit(scope, MemoryDocument(facts=(_fact(2),)), expected_revision=1)
    assert reader.load(scope).facts == (_fact(2),)
    writer.clear(scope)
    assert reader.load(scope).generation == 1


def test_same_size_rewrite_within_one_timestamp_tick_is_seen(home: Path) -> None:
    store = JsonFileStore(home)
    scope = Scope("alice")
    store.commit(scope, MemoryDocument(facts=(Fact("f1", "tea"),)), expected_revision=0)
    path = store.path(scope)
    st = os.stat(path)
    with open(path, "r+b") as handle:  # in place: same inode, same size
        changed = handle.read().replace(b'"tea"', b'"tee"')
        handle.seek(0)
        handle.write(changed)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_size == st.st_size
    assert store.load(scope).facts[0].content == "tee"


def test_file_removed_behind_the_cache_loads_empty(store: JsonFileStore) -> None:
    scope = Scope("alice")
    store.commit(scope, MemoryDocument(facts=(_fact(1),)), expected_revision=0)
    store.path(scope).unlink()
    assert store.load(scope).revision == 0


def test_cache_holds_at_most_cache_size_documents(home: Path) -> None:
    store = JsonFileStore(home, cache_size=3)
    for n in range(10):
        store.commit(Scope(f"user{n}"), MemoryDocument(facts=(_fact(n),)), expected_revision=0)
        store.load(Scope(f"user{n}"))
    assert store.cached_documents == 3
    assert store.load(Scope("user0")).facts == (_fact(0),)


def test_cache_can_be_disabled(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = JsonFileStore(home, cache_size=0)
    store.commit(Scope("a"), MemoryDocument(facts=(_fact(1),)), expected_revision=0)
    reads = _count_reads(monkeypatch)
    assert store.load(Scope("a")) == store.load(Scope("a"))
    assert (len(reads), store.cached_documents) == (2, 0)


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_invalid_cache_size_is_rejected(home: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="cache_size"):
        JsonFileStore(home, cache_size=bad)  # type: ignore[arg-type]


def test_scopes_skips_folders_it_did_not_write(
    store: JsonFileStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.commit(Scope("alice"), MemoryDocument(), expected_revision=0)
    stray = store.home / "users" / "copied-by-hand"
    stray.mkdir()
    (stray / "memory.json").write_text("{}")
    moved = store.home / "users" / "moved-folder"
    moved.mkdir()
    (moved / "memory.json").write_text("{}")
    (moved / "scope.json").write_text(json.dumps({"userId": "alice", "agent": None}))
    with caplog.at_level(logging.WARNING, logger="memfold.store.jsonfile"):
        assert list(store.scopes()) == [Scope("alice")]
    assert "copied-by-hand" in caplog.text
    assert "moved-folder" in caplog.text


def test_scopes_of_an_empty_home_is_empty(store: JsonFileStore) -> None:
    assert list(store.scopes()) == []


# --- across processes --------------------------------------------------------------------


def _increment_worker(home: str, worker: int, count: int) -> None:
    store = JsonFileStore(home)
    scope = Scope("shared@example.com", "agent")
    for i in range(count):
        fact = Fact(id=f"fact_{worker:02d}{i:06d}", content=f"w{worker} #{i}")
        while True:
            doc = store.load(scope)
            try:
                store.commit(
                    scope,
                    doc.with_changes(facts=(*doc.facts, fact)),
                    expected_revision=doc.revision,
                )
                break
            except ConflictError:
                continue


@pytest.mark.slow
def test_two_processes_committing_with_retry_lose_no_update(home: Path) -> None:
    count = 15
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_increment_worker, args=(str(home), w, count)) for w in range(2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=60)
    assert [p.exitcode for p in procs] == [0, 0]
    final = JsonFileStore(home).load(Scope("shared@example.com", "agent"))
    assert final.revision == 2 * count
    assert len({f.id for f in final.facts}) == 2 * count
    assert document_to_dict(final)["revision"] == 2 * count
