"""Nothing accepted is dropped silently: every ``record()`` that returned True either
lands in memory or is counted as dropped with an error log line naming its thread.

Hypothesis drives mixed callers (whole-thread snapshots, only the newest exchange,
urgent records, several threads and users) against an extractor that fails on some
turns; with one attempt per job a failure is a drop.
"""

from __future__ import annotations

import logging
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memfold import Memory, MemoryConfig
from memfold.errors import ExtractionError
from memfold.extract.base import ChangeSet, Extraction, ExtractionRequest, NewFact
from memfold.queue.base import describe_key
from memfold.testing import InMemoryStore

THREADS = [("t1", "alice"), ("t2", "alice"), ("t3", "bob")]


class Picky:
    """One fact per user turn; fails the whole job when a turn says "poison"."""

    name = "picky"

    def propose(self, request: ExtractionRequest) -> Extraction:
        users = [m.content for m in request.messages if m.role == "user"]
        if any("poison" in text for text in users):
            raise ExtractionError("the model choked")
        return Extraction(
            ChangeSet(new_facts=tuple(NewFact(f"Said {t}", "context", 0.9) for t in users))
        )


record_step = st.tuples(
    st.sampled_from(range(len(THREADS))),
    st.sampled_from(["snapshot", "newest", "urgent"]),
    st.integers(0, 9).map(lambda draw: draw == 0),  # poison: one turn in ten
    st.booleans(),  # flush after
)


@example(steps=[(0, "snapshot", False, False), (0, "newest", False, False)])  # D5
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(record_step, min_size=1, max_size=12))
def test_every_accepted_record_lands_or_is_counted_and_logged(
    steps: list[Any], caplog: Any
) -> None:
    caplog.clear()
    turns: dict[int, list[dict[str, str]]] = {i: [] for i in range(len(THREADS))}
    accepted: list[tuple[int, str]] = []  # (thread, user text)
    config = MemoryConfig(max_facts=1_000, retry_attempts=1, debounce_seconds=30)
    with (
        caplog.at_level(logging.ERROR),
        Memory(config, store=InMemoryStore(), extractor=Picky(), start_workers=False) as mem,
    ):
        for n, (index, how, poison, flush) in enumerate(steps):
            thread_id, user = THREADS[index]
            text = f"{'poison' if poison else 'turn'} {n}"
            exchange = [
                {"role": "user", "content": text, "id": f"u{n}"},
                {"role": "assistant", "content": "Noted.", "id": f"a{n}"},
            ]
            turns[index] += exchange
            messages = exchange if how == "newest" else turns[index]
            if mem.record(messages, thread_id=thread_id, user_id=user, urgent=how == "urgent"):
                accepted.append((index, text))
            if flush:
                mem.flush(10)
        assert mem.flush(10)
        status = mem.status()
        facts = {
            user: {f.content for f in mem.get(user_id=user).facts} for user in ("alice", "bob")
        }
    dropped_threads = {
        index
        for index, (thread_id, user) in enumerate(THREADS)
        if describe_key((thread_id, user, None)) in caplog.text
    }
    assert status.dropped == sum("dropped" in r.getMessage() for r in caplog.records)
    for index, text in accepted:
        _, user = THREADS[index]
        if f"Said {text}" in facts[user]:
            continue
        # not learned: only allowed when a job of this thread was dropped, loudly
        assert index in dropped_threads, f"{text!r} of {THREADS[index]} vanished"
        assert status.dropped > 0
