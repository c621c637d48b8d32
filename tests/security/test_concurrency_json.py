"""4 processes x 8 threads adding facts to one scope of the JSON store: nothing lost silently."""

from __future__ import annotations

import multiprocessing
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memfold import Memory, MemoryConfig
from memfold.apply import ApplyContext, apply
from memfold.errors import ConflictError
from memfold.extract.base import ChangeSet, NewFact
from memfold.model import Scope
from memfold.store.jsonfile import JsonFileStore

PROCESSES = 4
THREADS = 8
PER_THREAD = 3
SCOPE = Scope("shared-user", None)
DONE = "\x00done"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses fork")


def _threads(target: object, process: int) -> None:
    workers = [
        threading.Thread(target=target, args=(process, thread))  # type: ignore[arg-type]
        for thread in range(THREADS)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def _add_with_memory(home: str, process: int, out: multiprocessing.Queue[str]) -> None:
    mem = Memory(MemoryConfig(home=home, max_facts=1000), start_workers=False)

    def work(p: int, t: int) -> None:
        for n in range(PER_THREAD):
            content = f"manual fact p{p} t{t} n{n}"
            while True:
                try:
                    mem.add_fact(content, user_id=SCOPE.user_id)
                    break
                except ConflictError:  # raised, not silent: the caller may retry
                    continue
            out.put(content)

    _threads(work, process)
    mem.close()
    out.put(DONE)


def _add_with_apply(home: str, process: int, out: multiprocessing.Queue[str]) -> None:
    store = JsonFileStore(home)

    def work(p: int, t: int) -> None:
        for n in range(PER_THREAD):
            content = f"learned fact p{p} t{t} n{n}"
            item = NewFact(content, "context", 0.8, scope="user", durability="durable")
            while True:  # commit with reload-and-retry, as the updater does
                doc = store.load(SCOPE)
                context = ApplyContext(now=datetime.now(UTC), thread_id=f"p{p}t{t}", max_facts=40)
                result = apply(doc, ChangeSet(new_facts=(item,)), context)
                try:
                    store.commit(SCOPE, result.document, expected_revision=doc.revision)
                except ConflictError:
                    continue
                break
            for change in result.changes:
                out.put(f"{change.kind}\t{change.content}")

    _threads(work, process)
    out.put(DONE)


def _run(target: object, home: Path) -> list[str]:
    ctx = multiprocessing.get_context("fork")
    out: multiprocessing.Queue[str] = ctx.Queue()
    procs = [ctx.Process(target=target, args=(str(home), p, out)) for p in range(PROCESSES)]  # type: ignore[arg-type]
    for proc in procs:
        proc.start()
    lines: list[str] = []
    finished = 0
    while finished < PROCESSES:  # drain before joining: a child exits only once its queue is read
        line = out.get(timeout=60)
        if line == DONE:
            finished += 1
        else:
            lines.append(line)
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    return lines


def test_every_manual_fact_added_concurrently_is_stored(tmp_path: Path) -> None:
    added = _run(_add_with_memory, tmp_path)
    assert len(added) == PROCESSES * THREADS * PER_THREAD
    stored = {f.content for f in JsonFileStore(tmp_path).load(SCOPE).facts}
    assert stored == set(added)


def test_every_learned_fact_is_stored_or_its_eviction_is_recorded(tmp_path: Path) -> None:
    lines = _run(_add_with_apply, tmp_path)
    added = {line.split("\t", 1)[1] for line in lines if line.startswith("added\t")}
    evicted = {line.split("\t", 1)[1] for line in lines if line.startswith("evicted\t")}
    skipped = {line.split("\t", 1)[1] for line in lines if line.startswith("skipped\t")}
    expected = {
        f"learned fact p{p} t{t} n{n}"
        for p in range(PROCESSES)
        for t in range(THREADS)
        for n in range(PER_THREAD)
    }
    document = JsonFileStore(tmp_path).load(SCOPE)
    stored = {f.content for f in document.facts}
    assert len(document.facts) == 40  # the cap was reached, so evictions happened
    assert added | skipped == expected  # every proposal has a recorded outcome
    assert expected == stored | evicted | skipped
    assert stored <= added
    assert evicted - stored == evicted
