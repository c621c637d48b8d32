"""Many threads record overlapping keys into a queue with real worker threads: every key ends
processed with its latest messages, never two jobs of one scope at once, and no version of a
thread is processed twice."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict

from memfold.model import Message, Scope
from memfold.queue.base import Job, JobKey, job_key
from memfold.queue.memory import InProcessQueue

WAIT = 20.0
RECORDERS = 8
ADDS_PER_RECORDER = 2000
KEYS: tuple[JobKey, ...] = tuple(
    job_key(f"t{i}", f"u{i % 5}", "coder" if i % 3 == 0 else None) for i in range(30)
)


def thread_messages(key: JobKey, version: int) -> tuple[Message, ...]:
    """The last turn of a thread at ``version``: the assistant message carries the version."""
    return (
        Message("user", f"question {version}", id=f"{key[0]}:u{version}"),
        Message("assistant", f"answer {version}", id=f"{key[0]}:{version}"),
    )


def version_of(job: Job) -> int:
    return int(job.messages[-1].id.rsplit(":", 1)[1])  # type: ignore[union-attr]


class Checker:
    """The process callback: records versions per key and any overlap within a scope."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active: set[Scope] = set()
        self.overlaps: list[Scope] = []
        self.processed: dict[JobKey, list[int]] = defaultdict(list)
        self.max_parallel = 0

    def __call__(self, job: Job) -> None:
        with self.lock:
            if job.scope in self.active:
                self.overlaps.append(job.scope)
            self.active.add(job.scope)
            self.max_parallel = max(self.max_parallel, len(self.active))
        try:
            time.sleep(0.0002)  # simulated work (releases the GIL so jobs really overlap)
        finally:
            with self.lock:
                self.active.discard(job.scope)
                self.processed[job.key].append(version_of(job))


def test_concurrent_records_end_processed_with_latest_messages_once_per_quiet_period() -> None:
    checker = Checker()
    queue = InProcessQueue(
        checker, debounce_seconds=0.001, max_wait_seconds=0.005, workers=4, retry_attempts=1
    )
    versions: dict[JobKey, int] = dict.fromkeys(KEYS, 0)
    key_locks = {key: threading.Lock() for key in KEYS}
    start = threading.Barrier(RECORDERS, timeout=WAIT)
    refused: list[JobKey] = []

    def record(seed: int) -> None:
        rng = random.Random(seed)
        start.wait()
        for _ in range(ADDS_PER_RECORDER):
            key = rng.choice(KEYS)
            with key_locks[key]:  # version order = add order, per key
                versions[key] += 1
                if not queue.add(key, thread_messages(key, versions[key])):
                    refused.append(key)

    recorders = [threading.Thread(target=record, args=(seed,)) for seed in range(RECORDERS)]
    try:
        for thread in recorders:
            thread.start()
        for thread in recorders:
            thread.join(WAIT)
        assert queue.flush(WAIT)

        assert refused == []
        assert checker.overlaps == []
        for key in KEYS:
            seen = checker.processed[key]
            assert seen[-1] == versions[key], key
            assert seen == sorted(set(seen)), f"{key}: a version processed twice or backwards"
        status = queue.status()
        assert (status.pending, status.in_flight, status.failed) == (0, 0, 0)
        assert status.processed == sum(len(v) for v in checker.processed.values())

        # quiet period: nothing more runs; one more record per key runs exactly once
        before = status.processed
        assert queue.flush(WAIT)
        assert queue.status().processed == before
        for key in KEYS:
            versions[key] += 1
            assert queue.add(key, thread_messages(key, versions[key]))
        assert queue.flush(WAIT)
        assert queue.status().processed == before + len(KEYS)
        for key in KEYS:
            assert checker.processed[key][-1] == versions[key]
    finally:
        assert queue.close(WAIT)
