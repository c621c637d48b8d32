"""The offline rule extractor: speed, linear time on hostile input, quality, repetition.

.venv/bin/python benchmarks/run.py rules

1. Extraction time per 1,000 messages: every conversation of the shipped corpora
   (``corpora/extraction/*.jsonl``, user and assistant messages) through
   ``RuleExtractor.propose``, best of a few rounds.
2. Hostile input (D11): one user message of 100 KB and of 1 MB of each kind below, read
   with the default head+tail cap and with the cap lifted (``max_head_chars`` = the whole
   message), so the table shows that the reading itself is linear. Target: the 1 MB /
   100 KB time ratio about 10 uncapped (linear; one round, so noisy) and about 1 capped;
   0.1.0 took ~13 min for 1 MB of newlines. (Sentences over 400 characters are not read
   as statements, so no pattern ever sees a long unit.)
3. Recall, precision and invented facts on the corpora (the same scoring as
   ``memfold eval extraction``).
4. Share of duplicated tokens in the demo's injected blocks (``examples/conversations.jsonl``
   ingested with the rule extractor). Target 0; 0.1.0: 17 % (alice) and 21 % (wei).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memfold import Memory
from memfold.eval import evaluate, load_corpus
from memfold.eval.duplication import duplication
from memfold.extract.base import ExtractionRequest
from memfold.extract.rules import RuleExtractor
from memfold.model import Message, empty_document
from memfold.tokens import get_counter

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT / "corpora" / "extraction"
EXAMPLES = ROOT / "examples" / "conversations.jsonl"

#: (name, text of about ``size`` characters)
HOSTILE: tuple[tuple[str, Callable[[int], str]], ...] = (
    ("newlines", lambda n: "I live in Berlin" + "\n" * n + "ok"),
    ("spaces", lambda n: "I live in" + " " * n + "Berlin"),
    ("quote lines", lambda n: "> x\n" * (n // 4)),
    ("unclosed fences", lambda n: "```\nI live in Berlin\n" * (n // 19)),
    ("one long word", lambda n: "I use " + "A" * n),
    ("commas (zh)", lambda n: "我，" * (n // 2)),
    ("self-statements", lambda n: "I'm a nurse and I live in Leeds. " * (n // 33)),
    ("quotes", lambda n: '"' * n),
    ("clauses (en)", lambda n: "I like it, " * (n // 11)),
)


def _request(*texts: tuple[str, str]) -> ExtractionRequest:
    messages = tuple(Message(role, text) for role, text in texts)
    return ExtractionRequest(empty_document(), messages, thread_id="bench")


def _best(step: Callable[[], object], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - started)
    return best


def _corpus_requests() -> list[ExtractionRequest]:
    requests = []
    for path in sorted(CORPORA.glob("*.jsonl")):
        for conversation in load_corpus(path):
            texts = [
                (m["role"], m["content"])
                for m in conversation.messages
                if m["role"] in ("user", "assistant") and isinstance(m["content"], str)
            ]
            requests.append(_request(*texts))
    return requests


def _speed(quick: bool) -> list[dict[str, Any]]:
    extractor = RuleExtractor()
    requests = _corpus_requests()
    messages = sum(len(r.messages) for r in requests)

    def everything() -> None:
        for request in requests:
            extractor.propose(request)

    seconds = _best(everything, 3 if quick else 7)
    return [
        {
            "benchmark": f"rule extraction, {len(requests)} corpus conversations",
            "value": seconds / messages * 1000 * 1000,
            "unit": "ms / 1,000 messages",
            "target": "",
            "reference": "",
        }
    ]


def _hostile(quick: bool) -> list[dict[str, Any]]:
    rows = []
    for name, make in HOSTILE:
        for label, capped in (("capped", True), ("uncapped", False)):
            times = []
            for size in (100_000, 1_000_000):
                text = make(size)
                extractor = (
                    RuleExtractor()
                    if capped
                    else RuleExtractor(max_head_chars=len(text), max_tail_chars=0)
                )
                request = _request(("user", text))
                rounds = 1 if quick or not capped else 3
                times.append(_best(lambda r=request, e=extractor: e.propose(r), rounds))
            rows.append(
                {
                    "benchmark": f"hostile {name}, {label}: 1 MB in {times[1] * 1000:.0f} ms",
                    "value": times[1] / times[0],
                    "unit": "x the 100 KB time",
                    "target": "~1 (bounded)" if capped else "~10 (linear)",
                    "reference": "newlines: 13 min for 1 MB" if name == "newlines" else "",
                }
            )
    return rows


def _quality() -> list[dict[str, Any]]:
    rows = []
    for path in sorted(CORPORA.glob("*.jsonl")):
        report = evaluate(load_corpus(path)).report
        overall = report.overall
        for what, value, target in (
            ("recall", overall.recall or 0.0, ">= 0.5"),
            ("precision", overall.precision or 0.0, ">= 0.9"),
            ("invented facts", float(overall.invented), "0"),
        ):
            rows.append(
                {
                    "benchmark": f"{path.stem}: {what}",
                    "value": value,
                    "unit": "" if what == "invented facts" else "ratio",
                    "target": target,
                    "reference": "",
                }
            )
    return rows


def _repetition() -> list[dict[str, Any]]:
    count = get_counter("cl100k_base").count
    rows = []
    with Memory(storage="memory", start_workers=False) as memory:
        for line in EXAMPLES.read_text(encoding="utf-8").splitlines():
            conversation = json.loads(line)
            memory.update(
                conversation["messages"],
                thread_id=conversation["thread_id"],
                user_id=conversation["user_id"],
                agent=conversation.get("agent"),
            )
        for user, before in (("alice", "17.4 %"), ("wei", "21.4 %")):
            found = duplication(memory.context(user_id=user), count)
            rows.append(
                {
                    "benchmark": f"demo block for {user}: duplicated tokens ({found.tokens} total)",
                    "value": found.share * 100,
                    "unit": "%",
                    "target": "0",
                    "reference": f"0.1.0: {before}",
                }
            )
    return rows


def run(quick: bool) -> list[dict[str, Any]]:
    return [*_speed(quick), *_hostile(quick), *_quality(), *_repetition()]
