"""One extraction per scope: when several threads of one (user, agent) are due, one call
takes all their new turns (bounded by max_extraction_input_tokens) and one commit moves
every thread's watermark, on every queue (issue 16, part 2)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from memfold import Memory, MemoryConfig
from memfold.extract.base import ChangeSet, Extraction, ExtractionRequest, NewFact
from memfold.llm.base import ChatModelError
from memfold.queue.base import Job
from memfold.queue.clock import FakeClock
from memfold.queue.memory import InProcessQueue
from memfold.testing import ScriptedChatModel, extraction_reply
from memfold.tokens import get_counter

THREADS = {
    "oslo": "I just moved to Oslo, what should I buy for my first winter here?",
    "dog": "My dog Rex hates the snow. How do I get him to go outside?",
    "job": "I'm starting as a nurse at the university hospital next week, any advice?",
}
FACTS = ("Lives in Oslo", "Has a dog named Rex", "Works as a nurse")


def chat(user: str, answer: str = "Here is what I would do.") -> list[dict[str, str]]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]


def memory(model: Any, tmp_path: Path, **options: Any) -> Memory:
    config = MemoryConfig(home=tmp_path, extractor="llm", llm={"model": "m"}, **options)
    return Memory(config, chat_model=model, start_workers=False, clock=FakeClock())


def test_three_due_threads_of_one_user_cost_one_call_and_one_commit(tmp_path: Path) -> None:
    model = ScriptedChatModel(
        [extraction_reply("Lives in Oslo", "Has a dog named Rex", "Works as a nurse")]
    )
    with memory(model, tmp_path) as mem:
        before = mem.get(user_id="u").revision
        for thread, text in THREADS.items():
            assert mem.record(chat(text), thread_id=thread, user_id="u")
        assert mem.flush(10)
        doc = mem.get(user_id="u")
        history = mem.history(user_id="u")
        status = mem.status()
    assert len(model.calls) == 1
    prompt = model.calls[0][-1].content
    assert prompt.count("<thread>\n<user>") == 3
    assert all(text in prompt for text in THREADS.values())
    assert doc.revision == before + 1  # one commit for the facts and all three watermarks
    assert set(doc.watermarks) == set(THREADS)
    sources = {f.content: f.source for f in doc.facts}
    assert sources == {
        "Lives in Oslo": "oslo",
        "Has a dog named Rex": "dog",
        "Works as a nurse": "job",
    }
    added = {e.after: e.thread_id for e in history if e.kind == "added"}
    assert added == sources
    assert status.processed == 3
    assert status.prompt_tokens > 0


def test_threads_of_different_scopes_are_not_combined(tmp_path: Path) -> None:
    model = ScriptedChatModel(
        [extraction_reply("Lives in Oslo"), extraction_reply("Has a dog named Rex")]
    )
    with memory(model, tmp_path) as mem:
        mem.record(chat(THREADS["oslo"]), thread_id="a", user_id="u1")
        mem.record(chat(THREADS["dog"]), thread_id="b", user_id="u2")
        mem.record(chat(THREADS["job"]), thread_id="c", user_id="u1", agent="coach")
        model.add(extraction_reply("Works as a nurse"))
        assert mem.flush(10)
    assert len(model.calls) == 3
    assert all("<thread>" not in call[-1].content for call in model.calls)


def test_a_batch_too_large_for_one_request_is_split_within_the_bound(tmp_path: Path) -> None:
    limit = 1_500
    long_turns = {
        f"t{i}": f"I'm a beekeeper in Somerset, note {i}. " + "bees " * 180 for i in range(5)
    }
    model = ScriptedChatModel([extraction_reply()] * 5)
    count = get_counter("cl100k_base")
    with memory(model, tmp_path, max_extraction_input_tokens=limit) as mem:
        for thread, text in long_turns.items():
            mem.record(chat(text), thread_id=thread, user_id="u")
        assert mem.flush(10)
        doc = mem.get(user_id="u")
    assert 1 < len(model.calls) < 5
    for call in model.calls:
        assert sum(count(m.content) + 4 for m in call) <= limit
    sent = "".join(call[-1].content for call in model.calls)
    assert all(f"note {i}." in sent for i in range(5))  # every thread was sent once
    assert set(doc.watermarks) == set(long_turns)


def test_a_task_only_thread_in_a_batch_is_marked_seen_without_being_sent(tmp_path: Path) -> None:
    model = ScriptedChatModel([extraction_reply("Lives in Oslo", "Has a dog named Rex")])
    with memory(model, tmp_path) as mem:
        mem.record(chat(THREADS["oslo"]), thread_id="oslo", user_id="u")
        mem.record(chat("What's the time complexity of heappush?"), thread_id="task", user_id="u")
        mem.record(chat(THREADS["dog"]), thread_id="dog", user_id="u")
        assert mem.flush(10)
        doc = mem.get(user_id="u")
    assert len(model.calls) == 1
    assert "heappush" not in model.calls[0][-1].content
    assert set(doc.watermarks) == {"oslo", "task", "dog"}


def test_a_failed_batch_is_retried_for_every_thread_and_loses_nothing(tmp_path: Path) -> None:
    model = ScriptedChatModel(
        [ChatModelError("server busy"), extraction_reply("Lives in Oslo", "Has a dog named Rex")]
    )
    with memory(model, tmp_path, retry_backoff_seconds=0) as mem:
        mem.record(chat(THREADS["oslo"]), thread_id="oslo", user_id="u")
        mem.record(chat(THREADS["dog"]), thread_id="dog", user_id="u")
        assert mem.flush(10)
        doc = mem.get(user_id="u")
        status = mem.status()
    assert len(model.calls) == 2
    assert {f.content for f in doc.facts} == {"Lives in Oslo", "Has a dog named Rex"}
    assert status.failed == 2
    assert status.retried == 2
    assert status.processed == 2


class Clearing:
    """An extractor that clears the scope while it works (a clear racing a batch)."""

    name = "clearing"
    takes_threads = True  # reads ExtractionRequest.threads: one call for the batch

    def __init__(self) -> None:
        self.mem: Memory | None = None
        self.calls = 0

    def propose(self, request: ExtractionRequest) -> Extraction:
        self.calls += 1
        assert self.mem is not None
        self.mem.clear(user_id="u")
        facts = tuple(NewFact(f"Said {m.content[:10]}", "context", 0.9) for m in request.messages)
        return Extraction(ChangeSet(new_facts=facts))


def test_a_clear_during_a_batch_discards_it_and_marks_every_thread_seen(tmp_path: Path) -> None:
    extractor = Clearing()
    with Memory(home=tmp_path, extractor=extractor, start_workers=False) as mem:
        extractor.mem = mem
        for thread, text in THREADS.items():
            mem.record(chat(text), thread_id=thread, user_id="u")
        assert mem.flush(10)
        doc = mem.get(user_id="u")
    assert extractor.calls == 1
    assert not doc.facts
    assert set(doc.watermarks) == set(THREADS)


@pytest.mark.parametrize("queue", ["sqlite", "postgres"])
def test_durable_queues_claim_a_scopes_due_rows_together(
    tmp_path: Path, queue: str, request: pytest.FixtureRequest
) -> None:
    options: dict[str, Any] = {"queue": queue}
    if queue == "postgres":
        options.update(storage="postgres", dsn=request.getfixturevalue("postgres_dsn"))
    model = ScriptedChatModel(
        [extraction_reply("Lives in Oslo", "Has a dog named Rex", "Works as a nurse")]
    )
    with memory(model, tmp_path, **options) as mem:
        for thread, text in THREADS.items():
            assert mem.record(chat(text), thread_id=thread, user_id="u")
        assert mem.flush(20)
        doc = mem.get(user_id="u")
        assert mem.status().pending == 0
    assert len(model.calls) == 1
    assert set(doc.watermarks) == set(THREADS)
    assert len(doc.facts) == 3


def test_a_queue_without_a_batch_processor_runs_each_job_alone() -> None:
    seen: list[str] = []
    queue = InProcessQueue(lambda job: seen.append(job.thread_id), start=False, debounce_seconds=0)
    for thread in ("a", "b", "c"):
        queue.add((thread, "u", None), ())
    assert queue.run_due() == 3
    assert sorted(seen) == ["a", "b", "c"]


def test_only_due_threads_join_a_batch_and_the_scope_stays_exclusive() -> None:
    clock = FakeClock()
    batches: list[list[str]] = []
    running = threading.Lock()

    def batch(jobs: Any) -> None:
        assert running.acquire(blocking=False)  # never two jobs of one scope at once
        batches.append(sorted(job.thread_id for job in jobs))
        running.release()

    def single(job: Job) -> None:
        batch([job])

    queue = InProcessQueue(
        single, process_batch=batch, start=False, clock=clock, debounce_seconds=10,
        max_wait_seconds=100,
    )  # fmt: skip
    queue.add(("a", "u", None), ())
    queue.add(("b", "u", None), ())
    clock.advance(5)
    queue.add(("c", "u", None), ())  # not due yet when a and b are
    queue.add(("x", "other", None), ())
    clock.advance(5)
    assert queue.run_due() == 2
    clock.advance(10)
    assert queue.run_due() == 2
    assert batches == [["a", "b"], ["c"], ["x"]] or batches == [["a", "b"], ["x"], ["c"]]


def test_an_extractor_that_reads_no_threads_runs_each_thread_alone(tmp_path: Path) -> None:
    """The rule extractor would read one thread's question as the context of another
    thread's first turn, so its batches run thread by thread."""
    with Memory(home=tmp_path, extractor="rules", start_workers=False) as mem:
        mem.record(chat("Can you suggest a weekend trip?", "Sure! Where are you based?"),
                   thread_id="a", user_id="u")  # fmt: skip
        mem.record(chat("Leeds", "Leeds is a city in Yorkshire."), thread_id="b", user_id="u")
        assert mem.flush(10)
        doc = mem.get(user_id="u")
    assert not doc.facts
    assert set(doc.watermarks) == {"a", "b"}
