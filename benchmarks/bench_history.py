"""Change history: commit cost with history on vs off (JSON and SQLite, 200-fact
document), history size on disk per 1,000 events, and the cost of ``explain_context``.

.venv/bin/python benchmarks/run.py history

"On" is the steady state: the scope's history already holds its full 1,000 events (the
default bound), so every commit also appends and, now and then, compacts. Each commit
changes one fact and carries the three events of a typical extraction (a superseded
fact, the fact replacing it, a summary change), with excerpts of the user's words.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench_store import _document, _median_ms  # the store benchmark's 200-fact document

from memfold import Memory, MemoryConfig
from memfold.history import ChangeEvent
from memfold.model import Scope, document_to_dict
from memfold.store.base import HistoryStore
from memfold.store.jsonfile import JsonFileStore
from memfold.store.sqlite import SqliteStore

FACTS = 200  # bench_store's document
EVENTS = 1000
STAMP = "2026-11-30T12:00:00Z"
SCOPE = Scope("bench@example.com", "agent")


def _events(n: int) -> tuple[ChangeEvent, ...]:
    """What one extraction commit typically records."""
    words = f"Actually I moved last month, I live in city number {n} now and love it there"
    common: dict[str, Any] = {
        "at": STAMP, "actor": "extraction", "extractor": "llm", "thread_id": f"thread-{n % 17}",
    }  # fmt: skip
    return (
        ChangeEvent(
            "superseded", fact_id=f"fact_old{n:05d}", before=f"Lives in city number {n - 1}",
            after=f"Lives in city number {n}", reason="the user moved",
            replaced_by=f"fact_new{n:05d}", **common,
        ),
        ChangeEvent(
            "added", fact_id=f"fact_new{n:05d}", after=f"Lives in city number {n}",
            category="context", message_keys=(f"id:msg-{n:06d}",), excerpt=words,
            replaces=(f"fact_old{n:05d}",), **common,
        ),
        ChangeEvent(
            "summary", section="personalContext", before="Lives in the old city; likes tea",
            after=f"Lives in city number {n}; likes tea", reason="summary replaced",
            message_keys=(f"id:msg-{n:06d}",), excerpt=words, **common,
        ),
    )  # fmt: skip


def _row(name: str, value: float, unit: str = "ms", target: str = "") -> dict[str, Any]:
    return {"benchmark": name, "value": value, "unit": unit, "target": target, "reference": ""}


def _committer(store: HistoryStore) -> Callable[[int], None]:
    def commit(n: int) -> None:
        current = store.load(SCOPE)
        facts = list(current.facts)
        facts[n % FACTS] = replace(facts[n % FACTS], confidence=0.7 + (n % 30) / 100)
        store.commit(
            SCOPE, current.with_changes(facts=facts), expected_revision=current.revision,
            events=_events(n),
        )  # fmt: skip

    return commit


def _fill(store: HistoryStore) -> None:
    doc = store.commit(SCOPE, _document(), expected_revision=0)
    for n in range(EVENTS // 3 + 1):
        doc = store.commit(SCOPE, doc, expected_revision=doc.revision, events=_events(n))


def _commit_rows(tmp: Path, repeat: int) -> list[dict[str, Any]]:
    """Commits with history off and on, interleaved, so both see the same machine load."""
    rows = []
    kinds: dict[str, Callable[[Path, int], HistoryStore]] = {
        "JSON": lambda home, bound: JsonFileStore(home, max_history_events=bound),
        "SQLite": lambda home, bound: SqliteStore(home / "m.sqlite3", max_history_events=bound),
    }
    for name, make in kinds.items():
        off, on = make(tmp / f"{name}-off", 0), make(tmp / f"{name}-on", EVENTS)
        off.commit(SCOPE, _document(), expected_revision=0)
        _fill(on)
        wall: dict[str, list[float]] = {"off": [], "on": []}
        cpu: dict[str, list[float]] = {"off": [], "on": []}
        commits = {"off": _committer(off), "on": _committer(on)}
        for n in range(repeat):
            for mode in ("off", "on") if n % 2 else ("on", "off"):
                started, started_cpu = time.perf_counter(), time.process_time()
                commits[mode](n)
                wall[mode].append((time.perf_counter() - started) * 1000)
                cpu[mode].append((time.process_time() - started_cpu) * 1000)
        off.close()
        on.close()
        for mode, label in (("off", "history off (max_history_events 0)"),
                            ("on", "history on (1,000 kept, +3 events)")):  # fmt: skip
            rows.append(_row(f"{name} commit, 200 facts, {label}", statistics.median(wall[mode])))
            rows.append(
                _row(f"{name} commit, {label}: CPU time", statistics.mean(cpu[mode]), "ms CPU")
            )
    return rows


def _size_rows(tmp: Path) -> list[dict[str, Any]]:
    json_store = JsonFileStore(tmp / "size-json", max_history_events=EVENTS)
    _fill(json_store)
    history_file = json_store.folder(SCOPE) / "history.jsonl"
    lines = history_file.read_bytes().count(b"\n")
    json_kb = history_file.stat().st_size / lines * 1000 / 1024
    sqlite_store = SqliteStore(tmp / "size-sqlite" / "m.sqlite3", max_history_events=0)
    sqlite_store.commit(SCOPE, _document(), expected_revision=0)
    sqlite_store.close()
    empty = (tmp / "size-sqlite" / "m.sqlite3").stat().st_size
    sqlite_store = SqliteStore(tmp / "size-sqlite" / "m.sqlite3", max_history_events=EVENTS)
    doc = sqlite_store.load(SCOPE)
    for n in range(EVENTS // 3 + 1):
        doc = sqlite_store.commit(SCOPE, doc, expected_revision=doc.revision, events=_events(n))
    kept = len(sqlite_store.history(SCOPE))
    sqlite_store.close()  # checkpoints the WAL into the file
    full = (tmp / "size-sqlite" / "m.sqlite3").stat().st_size
    sqlite_kb = (full - empty) / kept * 1000 / 1024
    return [
        _row("history size per 1,000 events, JSON history.jsonl", json_kb, "KiB"),
        _row("history size per 1,000 events, SQLite (file growth)", sqlite_kb, "KiB"),
    ]


def _explain_rows(tmp: Path, repeat: int) -> list[dict[str, Any]]:
    with Memory(MemoryConfig(home=tmp / "explain", extractor="rules"), start_workers=False) as mem:
        scope = {"user_id": SCOPE.user_id, "agent": SCOPE.agent}
        mem.import_document(document_to_dict(_document()), **scope)
        mem.context(**scope)
        warm = _median_ms(lambda: mem.context(**scope), repeat * 10)
        report = _median_ms(lambda: mem.explain_context(**scope), repeat)
    return [
        _row("context(), 200 facts, warm (cached block)", warm),
        _row("explain_context(), 200 facts (plans uncached)", report, target="debug/CLI only"),
    ]


def run(quick: bool) -> list[dict[str, Any]]:
    repeat = 20 if quick else 200
    with tempfile.TemporaryDirectory(prefix="memfold-bench-history-") as tmp:
        root = Path(tmp)
        return [
            *_commit_rows(root, repeat),
            *_size_rows(root),
            *_explain_rows(root, max(10, repeat // 4)),
        ]
