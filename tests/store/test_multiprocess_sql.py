"""Two OS processes edit one scope through ``Memory`` on a SQL store: both land.

One process adds and edits manual facts, the other runs rule-based extractions with
``Memory.update``; every commit is compare-and-set, so each one must survive.
"""

from __future__ import annotations

import multiprocessing
import traceback
from typing import Any

import pytest

from memfold import Memory, MemoryConfig

ROUNDS = 5
TOPICS = ("Rust", "Haskell", "Kotlin", "Elixir", "Zig", "OCaml", "Erlang", "Scala")[:ROUNDS]


def _editor(mem: Memory) -> None:
    for i in range(ROUNDS):
        fact = mem.add_fact(f"Manual note {i}", category="context", user_id="alice")
        mem.edit_fact(fact.id, content=f"Manual note {i}, edited", user_id="alice")


def _extractor(mem: Memory) -> None:
    for i, topic in enumerate(TOPICS):
        messages = [
            {"role": "user", "content": f"I am learning {topic} these days. How do closures work?"},
            {"role": "assistant", "content": "Closures capture variables from their scope."},
        ]
        result = mem.update(messages, thread_id=f"t{i}", user_id="alice")
        if not result.committed:
            raise RuntimeError(f"update {i} did not commit: {result}")


def _child(
    role: str, settings: dict[str, Any], start: Any, errors: Any
) -> None:  # pragma: no cover - runs in a child process
    try:
        with Memory(MemoryConfig(**settings, extractor="rules"), start_workers=False) as mem:
            start.wait(60)
            {"editor": _editor, "extractor": _extractor}[role](mem)
    except BaseException:
        errors.put(f"{role}: {traceback.format_exc()}")
        raise


@pytest.mark.slow
def test_fact_edits_and_extractions_from_two_processes_both_land(sql_backend) -> None:
    sql_backend.open().close()  # create the schema once, before the race
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    errors = ctx.Queue()
    children = [
        ctx.Process(target=_child, args=(role, sql_backend.settings, start, errors))
        for role in ("editor", "extractor")
    ]
    for child in children:
        child.start()
    for child in children:
        child.join(60)
    reported = []
    while not errors.empty():
        reported.append(errors.get())
    assert reported == []
    assert [child.exitcode for child in children] == [0, 0]

    with Memory(MemoryConfig(**sql_backend.settings), start_workers=False) as mem:
        doc = mem.get(user_id="alice")
    contents = {f.content for f in doc.facts}
    assert {f"Manual note {i}, edited" for i in range(ROUNDS)} <= contents
    assert not any(c.startswith("Manual note") and not c.endswith("edited") for c in contents)
    assert {f"Learning {topic}" for topic in TOPICS} <= contents
    assert set(doc.watermarks) == {f"t{i}" for i in range(ROUNDS)}
    assert doc.revision == 3 * ROUNDS  # every add, edit and extraction committed once
