"""JsonFileStore on a 200-fact document: cold and cached load, commit, first save.

.venv/bin/python benchmarks/run.py store
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from memfold.model import SUMMARY_SECTIONS, Fact, MemoryDocument, Scope, Summary
from memfold.store.jsonfile import JsonFileStore

FACTS = 200
STAMP = "2026-11-30T12:00:00Z"


def _document() -> MemoryDocument:
    categories = ("preference", "knowledge", "context", "behavior", "goal", "correction")
    facts = [
        Fact(
            id=f"fact_{n:08x}",
            content=f"The user mentioned detail number {n}: prefers tools that are fast, "
            f"explicit and well documented (项目 {n})",
            category=categories[n % len(categories)],
            confidence=0.7 + (n % 30) / 100,
            created_at=STAMP,
            updated_at=STAMP,
            source=f"thread-{n % 17}",
            source_error="assumed the opposite" if n % 6 == 5 else None,
        )
        for n in range(FACTS)
    ]
    summaries = {
        s: Summary(f"Summary of {s}: " + "context words " * 20, STAMP) for s in SUMMARY_SECTIONS
    }
    return MemoryDocument(last_updated=STAMP, facts=tuple(facts), summaries=summaries)


def _median_ms(fn: Callable[[], Any], repeat: int) -> float:
    """Median wall time of ``fn`` (the median resists noise from other processes)."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def _row(name: str, value: float, target: str, reference: str) -> dict[str, Any]:
    return {
        "benchmark": name,
        "value": value,
        "unit": "ms",
        "target": target,
        "reference": reference,
    }


def run(quick: bool) -> list[dict[str, Any]]:
    repeat = 20 if quick else 200
    doc = _document()
    with tempfile.TemporaryDirectory(prefix="memfold-bench-") as tmp:
        home = Path(tmp)
        store = JsonFileStore(home)
        scope = Scope("bench@example.com", "agent")
        store.commit(scope, doc, expected_revision=0)
        path = store.path(scope)
        minute_ago = time.time_ns() - 60 * 1_000_000_000
        os.utime(path, ns=(minute_ago, minute_ago))  # as if written a minute ago

        cold = _median_ms(lambda: JsonFileStore(home).load(scope), repeat)
        store.load(scope)
        cached = _median_ms(lambda: store.load(scope), repeat * 50)

        def commit_one_change() -> None:
            current = store.load(scope)
            facts = list(current.facts)
            facts[7] = replace(facts[7], confidence=0.71 + (current.revision % 20) / 100)
            store.commit(
                scope, current.with_changes(facts=facts), expected_revision=current.revision
            )

        commit = _median_ms(commit_one_change, repeat)
        recent = _median_ms(lambda: store.load(scope), repeat * 10)
        counter = iter(range(10**9))
        first_save = _median_ms(
            lambda: store.commit(Scope(f"new-{next(counter)}"), doc, expected_revision=0), repeat
        )
    return [
        _row(f"store: cold load, {FACTS} facts", cold, "<= 3 ms", "243 ms (REFERENCE.md)"),
        _row(f"store: cached load, {FACTS} facts", cached, "<= 0.05 ms", "2.6 ms (REFERENCE.md)"),
        _row(
            "store: cached load within 2 s of a write (byte check)",
            recent,
            "",
            "2.6 ms (REFERENCE.md)",
        ),
        _row("store: commit one changed fact, fsync", commit, "<= 5 ms", "48 ms (REFERENCE.md)"),
        _row(
            f"store: save a new {FACTS}-fact document, fsync",
            first_save,
            "",
            "1,660 ms (REFERENCE.md)",
        ),
    ]


if __name__ == "__main__":
    for row in run(quick=False):
        print(row)
