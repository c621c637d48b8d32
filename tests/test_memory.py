import asyncio
import threading
from datetime import UTC, datetime

import pytest

from memfold import DuplicateFactError, FactNotFoundError, Memory, MemoryConfig, Scope
from memfold.errors import ConfigError
from memfold.extract.base import ChangeSet, Extraction, ExtractionRequest, NewFact, Usage
from memfold.queue.base import QueueStatus
from memfold.testing import FakeClock, InMemoryStore, ScriptedChatModel
from memfold.tokens import get_counter

ALICE = [
    {"role": "user", "content": "Hi! My name is Alice and I work as a data engineer in Berlin."},
    {"role": "assistant", "content": "Nice to meet you, Alice. How can I help?"},
    {"role": "user", "content": "I prefer concise answers. How do I partition a Parquet table?"},
    {"role": "assistant", "content": "Use partition_cols in pyarrow.parquet.write_to_dataset."},
]


class SpyExtractor:
    """Records every request and proposes one new fact per call."""

    name = "spy"

    def __init__(self, on_propose=None):
        self.requests: list[ExtractionRequest] = []
        self.on_propose = on_propose

    def propose(self, request: ExtractionRequest) -> Extraction:
        self.requests.append(request)
        if self.on_propose is not None:
            self.on_propose(request)
        last_user = [m.content for m in request.messages if m.role == "user"][-1]
        fact = NewFact(content=f"Said: {last_user[:40]}", category="context", confidence=0.9)
        return Extraction(ChangeSet(new_facts=(fact,)), Usage(100, 10))


def make_memory(tmp_path, **kw):
    kw.setdefault("start_workers", False)
    return Memory(MemoryConfig(home=tmp_path / "home"), **kw)


def test_update_then_context_with_the_offline_rule_extractor(tmp_path):
    with make_memory(tmp_path) as mem:
        result = mem.update(ALICE, thread_id="t1", user_id="alice")
        assert result.committed
        assert result.facts_added >= 2
        block = mem.context(user_id="alice")
    assert block.startswith("<user_memory>")
    assert block.rstrip().endswith("</user_memory>")
    assert "Berlin" in block
    assert "concise" in block


def test_record_then_flush_processes_in_the_background_path(tmp_path):
    with make_memory(tmp_path) as mem:
        assert mem.record(ALICE, thread_id="t1", user_id="alice")
        assert mem.get(user_id="alice").facts == ()
        assert mem.flush(timeout=10)
        assert mem.get(user_id="alice").facts
        assert mem.status().processed == 1


def test_record_without_a_user_and_assistant_exchange_queues_nothing(tmp_path):
    with make_memory(tmp_path) as mem:
        assert not mem.record([{"role": "user", "content": "hello"}], thread_id="t1")
        tool_only = [
            {"role": "user", "content": "ok"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function"}]},
        ]
        assert not mem.record(tool_only, thread_id="t1")
        assert mem.status().pending == 0


def test_second_update_of_a_thread_sends_only_new_turns(tmp_path):
    spy = SpyExtractor()
    with make_memory(tmp_path, extractor=spy) as mem:
        mem.update(ALICE[:2], thread_id="t1", user_id="alice")
        mem.update(ALICE, thread_id="t1", user_id="alice")
    first, second = spy.requests
    assert [m.content for m in first.messages] == [ALICE[0]["content"], ALICE[1]["content"]]
    # the assistant answer before the new turn is context; the old user turn is not re-sent
    assert [m.content for m in second.messages] == [m["content"] for m in ALICE[1:]]


def test_turn_whose_reply_repeats_the_previous_reply_is_still_extracted(tmp_path):
    spy = SpyExtractor()
    first = [
        {"role": "user", "content": "My name is Bob."},
        {"role": "assistant", "content": "Noted."},
    ]
    second = [*first, {"role": "user", "content": "I live in Paris."}, first[1]]
    with make_memory(tmp_path, extractor=spy) as mem:
        mem.update(first, thread_id="t1", user_id="bob")
        result = mem.update(second, thread_id="t1", user_id="bob")
    assert result.committed
    assert [m.content for m in spy.requests[1].messages] == ["Noted.", "I live in Paris.", "Noted."]


def test_unchanged_thread_is_not_extracted_again(tmp_path):
    spy = SpyExtractor()
    with make_memory(tmp_path, extractor=spy) as mem:
        mem.update(ALICE, thread_id="t1", user_id="alice")
        again = mem.update(ALICE, thread_id="t1", user_id="alice")
    assert len(spy.requests) == 1
    assert not again.committed
    assert again.skipped == "nothing new"


def test_watermark_survives_a_restart(tmp_path):
    spy = SpyExtractor()
    with make_memory(tmp_path, extractor=spy) as mem:
        mem.update(ALICE[:2], thread_id="t1", user_id="alice")
    spy2 = SpyExtractor()
    with make_memory(tmp_path, extractor=spy2) as mem:
        mem.update(ALICE, thread_id="t1", user_id="alice")
    assert ALICE[0]["content"] not in [m.content for m in spy2.requests[0].messages]


def test_clear_during_an_update_discards_its_result(tmp_path):
    holder: dict[str, Memory] = {}
    spy = SpyExtractor(on_propose=lambda req: holder["mem"].clear(user_id="alice"))
    with make_memory(tmp_path, extractor=spy) as mem:
        mem.add_fact("Old fact", user_id="alice")
        holder["mem"] = mem
        result = mem.update(ALICE, thread_id="t1", user_id="alice")
        assert not result.committed
        assert result.skipped == "cleared during update"
        assert mem.get(user_id="alice").facts == ()
        assert mem.get(user_id="alice").generation == 1


def test_fact_deleted_during_an_extraction_does_not_come_back(tmp_path):
    holder: dict = {}

    def delete_during(req):
        holder["mem"].delete_fact(holder["id"], user_id="alice")

    spy = SpyExtractor(on_propose=delete_during)
    with make_memory(tmp_path, extractor=spy) as mem:
        holder["mem"] = mem
        holder["id"] = mem.add_fact("Will be deleted", user_id="alice").id
        result = mem.update(ALICE, thread_id="t1", user_id="alice")
        contents = [f.content for f in mem.get(user_id="alice").facts]
    assert result.committed
    assert "Will be deleted" not in contents
    assert any(c.startswith("Said:") for c in contents)


def test_manual_fact_editing_round_trip(tmp_path):
    with make_memory(tmp_path) as mem:
        fact = mem.add_fact("Prefers tea", category="preference", user_id="bob")
        assert fact.is_manual
        with pytest.raises(DuplicateFactError):
            mem.add_fact("prefers  TEA.", user_id="bob")
        edited = mem.edit_fact(fact.id, content="Prefers green tea", confidence=0.95, user_id="bob")
        assert (edited.content, edited.confidence) == ("Prefers green tea", 0.95)
        mem.delete_fact(fact.id, user_id="bob")
        assert mem.get(user_id="bob").facts == ()
        with pytest.raises(FactNotFoundError, match=fact.id):
            mem.delete_fact(fact.id, user_id="bob")


def test_scopes_are_isolated_per_user_and_agent(tmp_path):
    with make_memory(tmp_path) as mem:
        mem.add_fact("Alice shared", user_id="alice")
        mem.add_fact("Alice coder", user_id="alice", agent="coder")
        mem.add_fact("Bob shared", user_id="bob")
        assert [f.content for f in mem.get(user_id="alice").facts] == ["Alice shared"]
        assert [f.content for f in mem.get(user_id="alice", agent="coder").facts] == ["Alice coder"]
        assert "Alice" not in mem.context(user_id="bob")


def test_concurrent_manual_adds_are_all_kept(tmp_path):
    with make_memory(tmp_path) as mem:
        threads = [
            threading.Thread(target=lambda i=i: mem.add_fact(f"Fact number {i}", user_id="u"))
            for i in range(16)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(mem.get(user_id="u").facts) == 16


def test_import_reference_v1_document_and_export_it_back(tmp_path):
    v1 = {
        "version": "1.0",
        "lastUpdated": "2026-01-01T00:00:00Z",
        "user": {"workContext": {"summary": "Works at Acme", "updatedAt": ""}},
        "history": {},
        "facts": [
            {"id": "fact_00000001", "content": "Likes jazz", "category": "preference",
             "confidence": 0.8, "createdAt": "2026-01-01T00:00:00Z", "source": "t0", "mood": "x"}
        ],
    }  # fmt: skip
    with make_memory(tmp_path) as mem:
        mem.add_fact("Will be replaced", user_id="alice")
        doc = mem.import_document(v1, user_id="alice")
        assert [f.content for f in doc.facts] == ["Likes jazz"]
        exported = mem.export(user_id="alice")
        assert exported["facts"][0]["mood"] == "x"
        assert exported["user"]["workContext"]["summary"] == "Works at Acme"
        with pytest.raises(ValueError, match="facts"):
            mem.import_document({"facts": "nope"}, user_id="alice")
        assert [f.content for f in mem.get(user_id="alice").facts] == ["Likes jazz"]


def test_context_respects_an_explicit_budget(tmp_path):
    with make_memory(tmp_path) as mem:
        for i in range(60):
            mem.add_fact(f"Fact {i} about a long and winding topic number {i}", user_id="u")
        small = mem.context(user_id="u", max_tokens=120)
        full = mem.context(user_id="u")
    counter = get_counter(mem.config.token_encoding)  # the exact counter the config selects
    assert counter.count(small) <= 120
    assert len(full) > len(small)


def test_llm_extractor_usage_is_reported_in_results_and_status(tmp_path):
    reply = (
        '{"user": {}, "history": {}, "newFacts": [{"content": "Likes Rust", "category": '
        '"preference", "confidence": 0.9, "scope": "user", "durability": "durable"}], '
        '"factsToRemove": []}'
    )
    model = ScriptedChatModel([reply])
    with make_memory(tmp_path, chat_model=model) as mem:
        assert mem.extractor_name == "llm"
        result = mem.update(ALICE, thread_id="t1", user_id="alice")
        assert result.usage.prompt_tokens > 0
        assert [f.content for f in mem.get(user_id="alice").facts] == ["Likes Rust"]
        assert mem.status().prompt_tokens == result.usage.prompt_tokens


def test_close_drains_pending_updates(tmp_path):
    mem = make_memory(tmp_path)
    mem.record(ALICE, thread_id="t1", user_id="alice")
    assert mem.close(timeout=10)
    with make_memory(tmp_path) as again:
        assert again.get(user_id="alice").facts


class ClosingStore(InMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_store_is_closed_when_the_queue_cannot_be_opened(tmp_path):
    store = ClosingStore()
    with pytest.raises(ConfigError, match="no_such_mod"):
        Memory(MemoryConfig(home=tmp_path, queue="no_such_mod:Q"), store=store)
    assert store.closed == 1


class FailingCloseQueue:
    def __init__(self, config, process, *, clock=None, start=True):
        pass

    def add(self, key, messages, signals=None, *, urgent=False):
        return True

    def flush(self, timeout=None):
        return False

    def close(self, timeout=None):
        raise RuntimeError("queue database is gone")

    def status(self):
        return QueueStatus()

    def run_due(self, now=None):
        return 0

    def discard(self, scope):
        return ()


def test_close_releases_the_store_even_when_the_queue_fails_to_close(tmp_path):
    store = ClosingStore()
    config = MemoryConfig(home=tmp_path, queue=f"{__name__}:FailingCloseQueue")
    mem = Memory(config, store=store)
    with pytest.raises(RuntimeError, match="gone"):
        mem.close()
    assert store.closed == 1


def test_second_close_reports_what_the_first_one_did(tmp_path):
    release = threading.Event()
    started = threading.Event()

    def stuck(request):
        started.set()
        release.wait(10)

    mem = make_memory(tmp_path, extractor=SpyExtractor(on_propose=stuck), start_workers=True)
    try:
        mem.record(ALICE, thread_id="t1", user_id="alice", urgent=True)
        assert started.wait(10)
        assert not mem.close(timeout=0)
        assert not mem.close()
    finally:
        release.set()


def test_background_workers_process_after_the_debounce(tmp_path):
    clock = FakeClock()
    spy = SpyExtractor()
    mem = Memory(
        MemoryConfig(home=tmp_path / "home", debounce_seconds=5, max_wait_seconds=20),
        extractor=spy,
        clock=clock,
        start_workers=False,
    )
    mem.record(ALICE, thread_id="t1", user_id="alice")
    queue = mem._get_queue()  # step the scheduler deterministically
    assert queue.run_due() == 0
    clock.advance(5)
    assert queue.run_due() == 1
    assert len(spy.requests) == 1
    mem.close()


def test_async_twins_do_not_block_and_work(tmp_path):
    async def main(mem: Memory) -> str:
        await mem.arecord(ALICE, thread_id="t1", user_id="alice")
        await mem.aflush(10)
        return await mem.acontext(user_id="alice")

    with make_memory(tmp_path) as mem:
        assert "Berlin" in asyncio.run(main(mem))


def test_injected_store_and_clock_are_used(tmp_path):
    store = InMemoryStore()
    fixed = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    with make_memory(tmp_path, store=store, now=lambda: fixed) as mem:
        fact = mem.add_fact("Uses vim", user_id="alice")
    assert fact.created_at == "2026-11-30T12:00:00Z"
    assert store.load(Scope("alice")).facts


def test_turns_of_an_update_fenced_by_clear_are_not_learned_again(tmp_path):
    holder: dict[str, Memory] = {}
    spy = SpyExtractor(on_propose=lambda req: holder["mem"].clear(user_id="alice"))
    with make_memory(tmp_path, extractor=spy) as mem:
        holder["mem"] = mem
        assert mem.update(ALICE[:2], thread_id="t1", user_id="alice").skipped == (
            "cleared during update"
        )
        spy.on_propose = None
        mem.update(ALICE, thread_id="t1", user_id="alice")  # the thread goes on
    assert [m.content for m in spy.requests[-1].messages] == [m["content"] for m in ALICE[1:]]


@pytest.mark.parametrize("queue", ["memory", "sqlite"])
def test_clear_drops_waiting_updates_and_forgets_their_turns(tmp_path, queue):
    spy = SpyExtractor()
    config = MemoryConfig(home=tmp_path / "home", queue=queue)
    with Memory(config, extractor=spy, start_workers=False) as mem:
        assert mem.record(ALICE[:2], thread_id="t1", user_id="alice")
        assert mem.record(ALICE[:2], thread_id="t9", user_id="bob")
        mem.clear(user_id="alice")
        assert mem.flush(timeout=10)
        assert mem.get(user_id="alice").facts == ()
        assert [r.thread_id for r in spy.requests] == ["t9"]  # bob's update still ran
        mem.record(ALICE, thread_id="t1", user_id="alice")
        assert mem.flush(timeout=10)
    sent = [m.content for m in spy.requests[-1].messages]
    assert ALICE[0]["content"] not in sent  # said before the clear: forgotten, not re-learned
    assert ALICE[2]["content"] in sent


def test_record_after_close_is_refused_without_raising(tmp_path, caplog):
    mem = make_memory(tmp_path)
    mem.close()
    assert mem.record(ALICE, thread_id="t1", user_id="alice") is False
    assert "closed" in caplog.text


def test_a_manual_fact_that_is_only_a_secret_is_refused_and_nothing_is_stored(tmp_path):
    with make_memory(tmp_path) as mem:
        with pytest.raises(ValueError, match="only a secret"):
            mem.add_fact("My password is hunter2hunter2", user_id="alice")
        fact = mem.add_fact(
            "Deploys with key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD", user_id="alice"
        )
        assert "sk-proj" not in fact.content
        with pytest.raises(ValueError, match="only a secret"):
            mem.edit_fact(fact.id, content="password: hunter2hunter2", user_id="alice")
        assert [f.content for f in mem.get(user_id="alice").facts] == [fact.content]


def test_an_extracted_fact_that_is_only_a_secret_is_not_stored(tmp_path):
    reply = (
        '{"newFacts": [{"content": "API key is [REDACTED:openai_key]", "category": "context", '
        '"confidence": 0.9, "scope": "user", "durability": "durable"}, {"content": "Likes Go", '
        '"category": "preference", "confidence": 0.9, "scope": "user", "durability": "durable"}]}'
    )
    with make_memory(tmp_path, chat_model=ScriptedChatModel([reply])) as mem:
        result = mem.update(ALICE, thread_id="t1", user_id="alice")
        assert [f.content for f in mem.get(user_id="alice").facts] == ["Likes Go"]
    assert any(c.reason == "only a redacted secret" for c in result.changes)


class GatedStore(InMemoryStore):
    """Holds the first load made by a worker thread until the test releases it."""

    def __init__(self):
        super().__init__()
        self.worker_loading = threading.Event()
        self.release = threading.Event()

    def load(self, scope):
        if threading.current_thread() is not threading.main_thread() and not self.release.is_set():
            self.worker_loading.set()
            assert self.release.wait(10)
        return super().load(scope)


def test_clear_while_a_taken_job_has_not_loaded_the_document_yet_forgets_its_turns(tmp_path):
    store = GatedStore()
    spy = SpyExtractor()
    mem = Memory(MemoryConfig(home=tmp_path / "home"), store=store, extractor=spy)
    try:
        assert mem.record(ALICE[:2], thread_id="t1", user_id="alice", urgent=True)
        assert store.worker_loading.wait(10)  # a worker took the job and is about to load
        mem.clear(user_id="alice")
        store.release.set()
        assert mem.flush(timeout=10)
        assert mem.get(user_id="alice").facts == ()
        mem.update(ALICE, thread_id="t1", user_id="alice")  # the thread goes on
    finally:
        store.release.set()
        mem.close()
    sent = [m.content for m in spy.requests[-1].messages]
    assert ALICE[0]["content"] not in sent  # said before the clear: forgotten
    assert ALICE[2]["content"] in sent


def test_recording_each_exchange_on_its_own_learns_every_one(tmp_path):
    """D5: within a debounce window a record holding only the newest exchange used to
    replace the pending one, so 9 of 10 were never learned."""
    with make_memory(tmp_path, extractor=SpyExtractor()) as mem:
        for k in range(10):
            assert mem.record(
                [
                    {"role": "user", "content": f"fact number {k}"},
                    {"role": "assistant", "content": "ok, noted"},
                ],
                thread_id="t",
                user_id="u",
            )
        assert mem.flush()
        spy = mem._extractor
        sent = [m.content for request in spy.requests for m in request.messages]
        assert [t for t in sent if t.startswith("fact")] == [f"fact number {k}" for k in range(10)]
