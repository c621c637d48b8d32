"""The durable queues across OS processes (multiprocessing ``spawn``), through ``Memory``:
three replicas with several recording threads each, a replica killed with SIGKILL
mid-job, and updates left queued by a process that exited. Processes synchronise on
events and files, never on timers; ``WAIT`` only bounds a failure."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import random
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memfold import Memory, MemoryConfig
from memfold.extract.base import ChangeSet, Extraction, ExtractionRequest, NewFact
from memfold.model import Message, message_key

pytestmark = pytest.mark.slow

CTX = multiprocessing.get_context("spawn")
WAIT = 30.0
USERS = ("u0", "u1", "u2")
THREADS_PER_USER = 2
TURNS = 4
REPLICAS = 3
RECORDERS_PER_REPLICA = 3


def thread_ids() -> list[str]:
    return [f"{user}-t{i}" for user in USERS for i in range(THREADS_PER_USER)]


def user_of(thread_id: str) -> str:
    return thread_id.split("-", maxsplit=1)[0]


def conversation(thread_id: str, turns: int) -> list[dict[str, str]]:
    """The first ``turns`` exchanges of a thread; every snapshot extends the previous."""
    out = []
    for i in range(turns):
        out.append({"role": "user", "content": f"{thread_id} note {i}", "id": f"{thread_id}-u{i}"})
        out.append({"role": "assistant", "content": f"ok {i}", "id": f"{thread_id}-a{i}"})
    return out


def expected_facts(user: str) -> set[str]:
    return {
        f"Said {thread_id} note {i}"
        for thread_id in thread_ids()
        if user_of(thread_id) == user
        for i in range(TURNS)
    }


class SpyExtractor:
    """Proposes one fact per new user message and appends one JSON line per job to its log:
    pid, thread, start and end (wall clock), message ids. With ``started`` set it touches
    that file and then blocks until the process is killed."""

    name = "spy"

    def __init__(self, log: str, started: str | None = None) -> None:
        self.log = log
        self.started = started
        self.lock = threading.Lock()

    def propose(self, request: ExtractionRequest) -> Extraction:
        start = time.time()
        if self.started is not None:
            Path(self.started).touch()
            threading.Event().wait(WAIT * 4)  # held until SIGKILL arrives
        facts = tuple(
            NewFact(f"Said {m.content}", "context", 0.9)
            for m in request.messages
            if m.role == "user"
        )
        line = {
            "pid": os.getpid(),
            # one extraction may take several due threads of a user (one call per scope)
            "threads": [t for t, _ in request.threads] or [request.thread_id],
            "start": start,
            "end": time.time(),
            "ids": [m.id for m in request.messages],
        }
        with self.lock, open(self.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        return Extraction(ChangeSet(new_facts=facts))


def _replica(config: dict[str, Any], log: str, seed: int, recorded: Any, finish: Any) -> None:
    """A replica: several threads record overlapping keys; then drain and close."""
    mem = Memory(MemoryConfig(**config), extractor=SpyExtractor(log))

    def record(index: int) -> None:
        rng = random.Random(seed * 100 + index)
        for turn in range(1, TURNS):
            keys = thread_ids()
            rng.shuffle(keys)
            for thread_id in keys:
                mem.record(
                    conversation(thread_id, turn), thread_id=thread_id, user_id=user_of(thread_id)
                )

    threads = [threading.Thread(target=record, args=(i,)) for i in range(RECORDERS_PER_REPLICA)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    recorded.set()
    if not finish.wait(WAIT):
        raise SystemExit("never told to finish")
    if not mem.close(WAIT):
        raise SystemExit("close did not drain")


def _victim(config: dict[str, Any], log: str, started: str) -> None:
    """Records one thread; its only worker blocks in the extractor until SIGKILL."""
    mem = Memory(MemoryConfig(**config), extractor=SpyExtractor(log, started=started))
    mem.record(conversation("u0-t0", TURNS), thread_id="u0-t0", user_id="u0")
    threading.Event().wait(WAIT * 4)


def _leaver(config: dict[str, Any], log: str) -> None:
    """Records every thread, then the process exits without closing anything."""
    mem = Memory(MemoryConfig(**config), extractor=SpyExtractor(log))
    for thread_id in thread_ids():
        mem.record(conversation(thread_id, TURNS), thread_id=thread_id, user_id=user_of(thread_id))
    os._exit(0)


@pytest.fixture(params=["sqlite", "postgres"])
def base_config(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    dsn = request.getfixturevalue("postgres_dsn") if request.param == "postgres" else None
    return {"home": str(tmp_path / "home"), "queue": request.param, "dsn": dsn}


def read_logs(paths: list[Path]) -> list[dict[str, Any]]:
    lines = []
    for path in paths:
        if path.exists():
            lines += [json.loads(line) for line in path.read_text().splitlines()]
    return lines


def wait_for(condition: Any, what: str) -> None:
    tick = threading.Event()
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        tick.wait(0.02)


def assert_memory_complete(mem: Memory, users: tuple[str, ...] = USERS) -> None:
    for user in users:
        doc = mem.get(user_id=user)
        contents = [fact.content for fact in doc.facts]
        assert len(contents) == len(set(contents)), f"duplicate facts for {user}"
        assert set(contents) == expected_facts(user)
        for thread_id in thread_ids():
            if user_of(thread_id) == user:
                last = Message("assistant", f"ok {TURNS - 1}", id=f"{thread_id}-a{TURNS - 1}")
                assert doc.watermarks[thread_id].message_key == message_key(last)


def test_three_replicas_process_every_key_once_at_a_time_and_lose_nothing(
    base_config: dict[str, Any], tmp_path: Path
) -> None:
    config = {**base_config, "debounce_seconds": 0.05, "max_wait_seconds": 0.3, "workers": 3}
    logs = [tmp_path / f"replica-{i}.log" for i in range(REPLICAS)]
    recorded = [CTX.Event() for _ in range(REPLICAS)]
    finish = CTX.Event()
    procs = [
        CTX.Process(target=_replica, args=(config, str(logs[i]), i, recorded[i], finish))
        for i in range(REPLICAS)
    ]
    for proc in procs:
        proc.start()
    try:
        for event in recorded:
            assert event.wait(WAIT)
        # The final, complete conversation of every thread, recorded last.
        spy = SpyExtractor(str(tmp_path / "parent.log"))  # no rule loading: faster
        with Memory(MemoryConfig(**config), extractor=spy, start_workers=False) as last:
            for thread_id in thread_ids():
                last.record(
                    conversation(thread_id, TURNS), thread_id=thread_id, user_id=user_of(thread_id)
                )
            last.close(0)  # leave the jobs to the replicas
        finish.set()
        for proc in procs:
            proc.join(WAIT)
            assert proc.exitcode == 0
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()

    jobs = read_logs(logs)
    assert {thread for job in jobs for thread in job["threads"]} >= set(thread_ids())
    by_scope: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for job in jobs:
        assert len({user_of(thread) for thread in job["threads"]}) == 1  # one scope a call
        by_scope[user_of(job["threads"][0])].append((job["start"], job["end"]))
    for user, spans in by_scope.items():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end, f"two jobs of {user} overlapped"
    with Memory(MemoryConfig(**config), extractor=spy, start_workers=False) as check:
        assert_memory_complete(check)
        assert check.status().pending == 0  # nothing left behind


def test_job_of_a_killed_replica_runs_again_after_its_lease_expires(
    base_config: dict[str, Any], tmp_path: Path
) -> None:
    # lease = extraction timeout + 2 s margin: short, so the test waits ~2.5 s for expiry
    config = {
        **base_config,
        "debounce_seconds": 0,
        "workers": 1,
        "extraction_timeout_seconds": 0.5,
    }
    started = tmp_path / "started"
    victim = CTX.Process(target=_victim, args=(config, str(tmp_path / "victim.log"), str(started)))
    victim.start()
    try:
        wait_for(started.exists, "the victim's job to start")
        os.kill(victim.pid or 0, signal.SIGKILL)
        victim.join(WAIT)
        assert victim.exitcode == -signal.SIGKILL
    finally:
        if victim.is_alive():
            victim.kill()
    log = tmp_path / "survivor.log"
    with Memory(MemoryConfig(**config), extractor=SpyExtractor(str(log))) as survivor:
        survivor.record(conversation("u1-t0", 1), thread_id="u1-t0", user_id="u1")
        assert survivor.flush(WAIT)  # waits out the dead replica's lease, then reruns its job
        doc = survivor.get(user_id="u0")
    assert {fact.content for fact in doc.facts} == {f"Said u0-t0 note {i}" for i in range(TURNS)}
    assert "u0-t0" in {thread for job in read_logs([log]) for thread in job["threads"]}
    assert not (tmp_path / "victim.log").exists()  # the victim never finished its job


def test_updates_queued_by_a_process_that_exited_run_after_a_restart(
    base_config: dict[str, Any], tmp_path: Path
) -> None:
    config = {**base_config, "debounce_seconds": 60}
    leaver = CTX.Process(target=_leaver, args=(config, str(tmp_path / "leaver.log")))
    leaver.start()
    leaver.join(WAIT)
    assert leaver.exitcode == 0
    assert not (tmp_path / "leaver.log").exists()  # nothing ran before it exited
    log = tmp_path / "restart.log"
    with Memory(MemoryConfig(**config), extractor=SpyExtractor(str(log))) as restarted:
        # the durable queue opens with Memory: what the leaver queued is pending at once
        assert restarted.status().pending == len(thread_ids())
        assert restarted.flush(WAIT)
        assert_memory_complete(restarted)
