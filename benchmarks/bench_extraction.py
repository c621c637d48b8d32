"""Extraction prompt size (cl100k input tokens) of the LLM extractor.

.venv/bin/python benchmarks/run.py extraction

1. A fixed 6-message conversation (3 user turns, 3 assistant answers) with 0, 100 and 200
   facts in memory; the six summaries are filled. Target: <= 3,500 tokens at 100 facts
   (reference system: ~21,600 hardened, ~9,000 simple).
2. A 50-exchange thread extracted after every exchange: total input tokens when only the
   new messages are sent (watermark) versus re-sending the whole thread each time.
   Target: >= 10x fewer.

Facts cycle through twelve realistic fact texts (8-14 tokens, 11 on average). Counts
are the exact cl100k tokens of the system and user message texts (chat-format overhead
of a few tokens per message is not included), plus the reply's JSON schema, which is sent
with every call: as ``response_format`` (json_schema, or llama.cpp's json_object + schema)
or, where the server takes neither, appended to the system message. Its compact JSON is
counted; providers that turn it into a grammar or their own prompt text count it their way.
"""

from __future__ import annotations

import json
from typing import Any

from memfold.extract.base import ExtractionRequest
from memfold.extract.llm import EXTRACTION_SCHEMA, LLMExtractor
from memfold.llm.scripted import ScriptedChatModel
from memfold.model import SUMMARY_SECTIONS, Fact, MemoryDocument, Message, Summary
from memfold.tokens import get_counter

CATEGORIES = ("preference", "knowledge", "context", "behavior", "goal", "correction")
SUBJECTS = (
    "Prefers concise answers with code first and explanation after",
    "Works as a backend engineer on a payments platform written in Go",
    "Uses PostgreSQL 16 with logical replication in production",
    "Is learning Rust in the evenings to write command-line tools",
    "Wants error messages that say how to fix the problem",
    "Lives in Hangzhou and works in the UTC+8 time zone",
    "Reviews pull requests every morning before standup",
    "Dislikes answers that repeat the question back",
    "Plans to migrate the team's CI from Jenkins to GitHub Actions this quarter",
    "Reads Chinese and English; prefers English for technical terms",
    "Has two cats and often mentions them when taking breaks",
    "Uses Neovim with a minimal configuration and tmux",
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
            (Message("user", f"[{n}] {user[1]}"), Message("assistant", f"[{n}] {answer[1]}"))
        )
    return out


def run(quick: bool) -> list[dict[str, Any]]:
    count = get_counter("cl100k_base")
    extractor = LLMExtractor(ScriptedChatModel(), counter=count)
    schema = count(json.dumps(EXTRACTION_SCHEMA, separators=(",", ":")))

    def prompt_tokens(doc: MemoryDocument, messages: tuple[Message, ...]) -> tuple[int, int]:
        sent, _ = extractor.prompt(ExtractionRequest(doc, messages))
        return count(sent[0].content) + schema, count(sent[1].content)

    rows: list[dict[str, Any]] = [
        {
            "benchmark": "reply JSON schema sent with each extraction",
            "value": float(schema),
            "unit": "tokens",
            "target": "",
            "reference": "",
        }
    ]
    conversation = _messages(CONVERSATION)
    references = {0: "", 100: "~21,600 hardened / ~9,000 simple", 200: ""}
    for facts, reference in references.items():
        system, user = prompt_tokens(_document(facts), conversation)
        rows.append(
            {
                "benchmark": f"extraction input, {facts} facts "
                f"(sys {system - schema} + schema {schema} + user {user})",
                "value": float(system + user),
                "unit": "tokens",
                "target": "<= 3,500" if facts == 100 else "",
                "reference": reference,
            }
        )

    per_fact = (rows[3]["value"] - rows[1]["value"]) / 200
    rows.append(
        {
            "benchmark": "extraction input per fact in memory",
            "value": per_fact,
            "unit": "tokens",
            "target": "",
            "reference": "~190 hardened / ~75 simple",
        }
    )

    exchanges = 20 if quick else 50
    doc = _document(20)
    thread = _thread(exchanges)
    watermark = resend = watermark_turns = resend_turns = 0
    for k in range(exchanges):
        system, user = prompt_tokens(doc, thread[k])
        watermark += system + user
        watermark_turns += sum(count(m.content) for m in thread[k])
        everything = tuple(m for pair in thread[: k + 1] for m in pair)
        system, user = prompt_tokens(doc, everything)
        resend += system + user
        resend_turns += sum(count(m.content) for m in everything)
    rows += [
        {
            "benchmark": f"{exchanges}-exchange thread, 20 facts: total input with watermark",
            "value": float(watermark),
            "unit": "tokens",
            "target": "",
            "reference": "",
        },
        {
            "benchmark": f"{exchanges}-exchange thread: total input re-sending the thread",
            "value": float(resend),
            "unit": "tokens",
            "target": "",
            "reference": "simple version re-sends (O(N^2))",
        },
        {
            "benchmark": f"{exchanges}-exchange thread: re-send / watermark, whole prompt",
            "value": resend / watermark,
            "unit": "x",
            "target": ">= 10x",
            "reference": "1x",
        },
        {
            "benchmark": f"{exchanges}-exchange thread: re-send / watermark, conversation part",
            "value": resend_turns / watermark_turns,
            "unit": "x",
            "target": ">= 10x",
            "reference": "1x",
        },
    ]
    return rows
