"""Extraction prompt size (cl100k input tokens) of the LLM extractor.

.venv/bin/python benchmarks/run.py extraction

1. A fixed 6-message conversation (3 user turns, 3 assistant answers) with 0, 100 and 200
   facts in memory, each about 18 tokens long (realistic fact lengths); the six summaries
   are filled. Above ``view_max_facts`` (40) the extractor sees the smaller view
   (``memfold.extract.view``); the row without it is every fact. Target: <= 3,000 tokens
   at 100 facts, the schema included (reference system: ~21,600 hardened, ~9,000 simple,
   from REFERENCE.md).
2. A 50-exchange working session (``_session.py``: 8 of 50 user turns say something
   about the user) extracted after every exchange through ``Memory.update`` (watermark,
   extraction gate, view; 20 facts in memory), against re-sending the whole thread on
   every exchange with the same prompt (what the reference's simple version does).
   Target: >= 10x fewer input tokens, the schema included. The worst case, a thread in
   which every exchange holds a fact or a correction, is measured too.

Counts are the exact cl100k tokens of the system and user message texts (chat-format
overhead of a few tokens per message is not included), plus the reply's JSON schema, which is
sent with every call: as ``response_format`` (json_schema, or llama.cpp's json_object +
schema) or, where the server takes neither, appended to the system message. Its compact
JSON is counted; providers that turn it into a grammar or their own prompt text count it
their way.
"""

from __future__ import annotations

import json
from typing import Any

from _session import SESSION
from _table import row

from memfold import Memory, MemoryConfig
from memfold.extract.base import ExtractionRequest
from memfold.extract.llm import EXTRACTION_SCHEMA, LLMExtractor
from memfold.llm.scripted import ScriptedChatModel
from memfold.model import SUMMARY_SECTIONS, Fact, MemoryDocument, Message, Scope, Summary
from memfold.store.inmemory import InMemoryStore
from memfold.tokens import get_counter

CATEGORIES = ("preference", "knowledge", "context", "behavior", "goal", "correction")
SUBJECTS = (
    "Prefers concise answers with the code first and a short explanation after it, never before",
    "Works as a senior backend engineer on a payments platform written in Go and gRPC",
    "Uses PostgreSQL 16 with logical replication in production for the ledger service at work",
    "Is learning Rust in the evenings to write small command-line tools for the platform team",
    "Wants error messages that say how to fix the problem, not only what went wrong and where",
    "Lives in Hangzhou with a partner and two cats, and works remotely in the UTC+8 time zone",
    "Reviews pull requests every morning before the team's ten o'clock standup meeting on Zoom",
    "Dislikes answers that repeat the question back or open with 'Great question' before answering",
    "Plans to migrate the team's CI from Jenkins to GitHub Actions before the end of Q1",
    "Reads Chinese and English fluently; prefers English for technical terms and code comments",
    "Is preparing for a system design interview at a large cloud provider in March next year",
    "Uses Neovim with a minimal Lua configuration, tmux and zsh on a 14-inch MacBook Pro",
)
SUMMARY_TEXT = {
    "workContext": "Senior backend engineer at a fintech company; owns the payment "
    "reconciliation service (Go, PostgreSQL, Kafka) and mentors two juniors.",
    "personalContext": "Bilingual Chinese/English, based in Hangzhou; likes short, direct "
    "answers and dislikes filler.",
    "topOfMind": "Cutting the reconciliation batch time under ten minutes before the "
    "end-of-quarter release; evaluating partitioned tables.",
    "recentMonths": "Moved the service from MySQL to PostgreSQL, set up logical replication "
    "and started learning Rust for internal tooling.",
    "earlierContext": "Previously built data pipelines in Python at an e-commerce company.",
    "longTermBackground": "Computer science degree from Zhejiang University; eight years "
    "of backend development.",
}
CONVERSATION = (
    (
        "user",
        "Our nightly reconciliation job on PostgreSQL 16 takes 40 minutes. The main query "
        "joins a 300M-row ledger table with settlements on (merchant_id, day). Would "
        "declarative partitioning by day help, or should I look at indexes first? Please "
        "keep it short, I only need the decision and the commands.",
    ),
    (
        "assistant",
        "Look at the plan first, then partition. 1) Run EXPLAIN (ANALYZE, BUFFERS) on the "
        "join: if you see a sequential scan on ledger, add a composite index on "
        "(merchant_id, day) INCLUDE (amount) and re-check. 2) If the job only touches "
        "yesterday's rows, range-partition ledger by day: CREATE TABLE ledger_p (LIKE ledger "
        "INCLUDING ALL) PARTITION BY RANGE (day); create daily partitions with a script or "
        "pg_partman, then move data in batches with INSERT ... SELECT per day. Partition "
        "pruning then limits the join to one partition. 3) Raise work_mem for this session "
        "only (SET work_mem = '256MB') so the hash join stays in memory. Expect the biggest "
        "gain from pruning plus the index; measure after each step.",
    ),
    (
        "user",
        "No, that's wrong for our case: we can't use pg_partman, the DBAs only allow "
        "extensions from the approved list and it isn't on it. Also we never update old "
        "days, so detaching old partitions is fine.",
    ),
    (
        "assistant",
        "Understood, no pg_partman. Create partitions with a small SQL function called from "
        "your existing scheduler: it runs CREATE TABLE IF NOT EXISTS ledger_y2026m11d30 "
        "PARTITION OF ledger_p FOR VALUES FROM ('2026-11-30') TO ('2026-12-01') for the "
        "next seven days. Since old days never change, detach partitions older than 90 days "
        "with ALTER TABLE ledger_p DETACH PARTITION ... CONCURRENTLY and archive them; this "
        "also keeps autovacuum cheap.",
    ),
    (
        "user",
        "Perfect, exactly what I needed. From now on assume the DBA extension restriction "
        "whenever we talk about our database.",
    ),
    (
        "assistant",
        "Noted: I'll only suggest core PostgreSQL features or extensions you confirm are on "
        "the approved list.",
    ),
)


def _document(facts: int) -> MemoryDocument:
    items = [
        Fact(
            id=f"fact_{n:08x}",
            content=SUBJECTS[n % len(SUBJECTS)],
            category=CATEGORIES[n % len(CATEGORIES)],
            confidence=0.7 + (n % 30) / 100,
            created_at="2026-11-30T12:00:00Z",
            updated_at="2026-11-30T12:00:00Z",
            source=f"thread-{n % 17}",
        )
        for n in range(facts)
    ]
    summaries = {
        name: Summary(SUMMARY_TEXT[name], "2026-11-30T12:00:00Z") for name in SUMMARY_SECTIONS
    }
    return MemoryDocument(summaries=summaries, facts=tuple(items))


def _messages(pairs: Any) -> tuple[Message, ...]:
    return tuple(Message(role, text) for role, text in pairs)


def _thread(exchanges: int) -> list[tuple[Message, Message]]:
    out = []
    for n in range(exchanges):
        user, answer = CONVERSATION[(2 * n) % 6], CONVERSATION[(2 * n + 1) % 6]
        out.append(
            (Message("user", f"{user[1]} (#{n})"), Message("assistant", f"{answer[1]} (#{n})"))
        )
    return out


Row = dict[str, Any]


def _empty_reply() -> str:
    return json.dumps({"newFacts": [], "factsToRemove": []})


def _turn_by_turn(
    exchanges: list[tuple[Message, Message]], doc: MemoryDocument, schema: int
) -> tuple[int, int, int]:
    """(calls, input tokens) of extracting after every exchange through ``Memory.update``
    (watermark, gate, view), and the input tokens of re-sending the thread each time."""
    count = get_counter("cl100k_base")
    model = ScriptedChatModel([_empty_reply()] * len(exchanges))
    config = MemoryConfig(extractor="llm", llm={"model": "m"})
    store = InMemoryStore()
    store.commit(Scope("u"), doc, expected_revision=0)
    resender = LLMExtractor(ScriptedChatModel(), counter=count)
    resend = 0
    with Memory(config, store=store, chat_model=model, start_workers=False) as mem:
        thread: list[dict[str, str]] = []
        for k, (user, answer) in enumerate(exchanges):
            thread += [{"role": "user", "content": user.content},
                       {"role": "assistant", "content": answer.content}]  # fmt: skip
            mem.update(thread, thread_id="session", user_id="u")
            everything = tuple(m for pair in exchanges[: k + 1] for m in pair)
            sent, _ = resender.prompt(ExtractionRequest(doc, everything))
            resend += sum(count(m.content) for m in sent) + schema
    used = sum(sum(count(m.content) for m in call) + schema for call in model.calls)
    return len(model.calls), used, resend


def run(quick: bool) -> list[dict[str, Any]]:
    count = get_counter("cl100k_base")
    extractor = LLMExtractor(ScriptedChatModel(), counter=count)
    everything = LLMExtractor(ScriptedChatModel(), counter=count, view_max_facts=None)
    schema = count(json.dumps(EXTRACTION_SCHEMA, separators=(",", ":")))

    def prompt_tokens(
        doc: MemoryDocument, messages: tuple[Message, ...], using: LLMExtractor = extractor
    ) -> tuple[int, int]:
        sent, _ = using.prompt(ExtractionRequest(doc, messages))
        return count(sent[0].content) + schema, count(sent[1].content)

    rows: list[Row] = [row("reply JSON schema sent with each extraction", float(schema), "tokens")]
    per_fact = sum(count(s) for s in SUBJECTS) / len(SUBJECTS)
    rows.append(row("fact length in these memories (mean)", per_fact, "tokens"))
    conversation = _messages(CONVERSATION)
    references = {0: "", 100: "~21,600 hardened / ~9,000 simple (REFERENCE.md)", 200: ""}
    for facts, reference in references.items():
        system, user = prompt_tokens(_document(facts), conversation)
        rows.append(
            row(
                f"extraction input, {facts} facts (sys {system - schema} + schema {schema} "
                f"+ user {user})",
                float(system + user),
                "tokens",
                "<= 3,000 incl. schema" if facts == 100 else "",
                reference,
            )
        )
    system, user = prompt_tokens(_document(100), conversation, everything)
    rows.append(
        row("extraction input, 100 facts, every fact in view (view off)", float(system + user),
             "tokens", "", "")
    )  # fmt: skip
    empty = prompt_tokens(_document(0), conversation, everything)
    full = prompt_tokens(_document(200), conversation, everything)
    rows.append(
        row("extraction input per fact in memory (view off)", (sum(full) - sum(empty)) / 200,
             "tokens", "", "~190 hardened / ~75 simple (REFERENCE.md)")
    )  # fmt: skip

    session = [(Message("user", u), Message("assistant", a)) for _, u, a in SESSION]
    if quick:
        session = session[:20]
    calls, used, resend = _turn_by_turn(session, _document(20), schema)
    n = len(session)
    rows += [
        row(f"{n}-exchange session, 20 facts: extraction calls made (gate)", float(calls),
             "calls", "", f"{n}: one per exchange (REFERENCE.md)"),
        row(f"{n}-exchange session: total input, watermark + gate + view", float(used),
             "tokens", "", ""),
        row(f"{n}-exchange session: total input re-sending the thread", float(resend),
             "tokens", "", "simple version re-sends, O(N^2) (REFERENCE.md)"),
        row(f"{n}-exchange session: re-send / memfold, whole prompt incl. schema",
             resend / used, "x", ">= 10x", "1x"),
    ]  # fmt: skip
    worst = _thread(20 if quick else 50)
    calls, used, resend = _turn_by_turn(worst, _document(20), schema)
    rows += [
        row(f"{len(worst)}-exchange thread, every exchange holds a fact: calls", float(calls),
             "calls", "", ""),
        row(f"{len(worst)}-exchange thread, every exchange holds a fact: re-send / memfold",
             resend / used, "x", "", "1x"),
    ]  # fmt: skip
    return rows
