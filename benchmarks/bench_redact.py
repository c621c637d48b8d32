"""Secret redaction cost per recorded conversation, and a comparison with detect-secrets.

.venv/bin/python benchmarks/run.py redact

1. A 20-message ordinary technical conversation (code, versions, SHAs, URLs, Chinese),
   redacted message by message as ``Memory.record`` does. Target: well under 1 ms.
2. The same conversation with a secret in every other message (keys, JWT, passwords,
   card number, URL with password).
3. If ``detect-secrets`` is installed: its regex plugins on the same two conversations
   (``analyze_string`` per message; it only finds values, we would still need spans) and
   its catch rate on ``tests/security/corpus/secrets.jsonl`` next to ours.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memfold.redact import Redactor

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "security" / "corpus"

ORDINARY = (
    "Can you refactor this function so it returns early when the list is empty?",
    "Sure. Move the `if not items: return []` check to the top, then loop as before.",
    "We upgraded Django from 4.2.11 to 5.0.6 last week and tests pass on Python 3.11.9.",
    "Good. Check the release notes for 5.0: the form renderer defaults changed.",
    "Commit 3f9a2c1d4e5b6a7980c1d2e3f4a5b6c7d8e9f001 fixed the race in the scheduler.",
    "Then the lock is held across the await now; that removes the double dispatch.",
    "See https://docs.python.org/3/library/asyncio-sync.html#asyncio.Lock for details.",
    "Right, asyncio.Lock is not reentrant, so avoid acquiring it in the callback.",
    "请帮我把这段代码改成异步的，顺便加上超时。",
    "好的：用 asyncio.wait_for 包一层，超时设为 30 秒，并在 finally 里释放连接。",
    "request id 9b2f6c1e-3a4d-4e8f-9a7b-1c2d3e4f5a6b failed with 502 at 2024-05-14T09:30Z",
    "A 502 from the proxy usually means the upstream closed early; check its logs.",
    "docker pull ghcr.io/acme/api@sha256:" + "ab12" * 16,
    "Pinning by digest is good; the tag can move but the digest cannot.",
    "The token limit is 128000 and max_tokens: 4096 in our config.",
    "Keep max_tokens lower for summaries; 1024 is usually enough.",
    "I prefer tabs over spaces, but the team uses 4 spaces in Python.",
    "Noted: I'll format examples with 4 spaces.",
    "Thanks, that's all for today.",
    "You're welcome! Good luck with the release.",
)


def _with_secrets() -> tuple[str, ...]:
    rows = [json.loads(line) for line in (CORPUS / "secrets.jsonl").read_text("utf-8").splitlines()]
    picks = rows[:: max(1, len(rows) // 10)][:10]
    messages = list(ORDINARY)
    for index, row in enumerate(picks):
        messages[index * 2] = row["text"]
    return tuple(messages)


def _median_us(step: Callable[[], object], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter_ns()
        step()
        samples.append((time.perf_counter_ns() - started) / 1000)
    return statistics.median(samples)


def _ours(messages: tuple[str, ...]) -> Callable[[], object]:
    redact = Redactor().redact_all
    return lambda: redact(messages)


def _detect_secrets_rows(rounds: int) -> list[dict[str, Any]]:
    try:
        started = time.perf_counter()
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.plugins.base import RegexBasedDetector

        import_ms = (time.perf_counter() - started) * 1000
    except ImportError:
        return []
    plugins = [
        cls()
        for cls in get_mapping_from_secret_type_to_class().values()
        if issubclass(cls, RegexBasedDetector)
    ]

    def scan(messages: tuple[str, ...]) -> Callable[[], object]:
        return lambda: [list(p.analyze_string(m)) for m in messages for p in plugins]

    rows = [json.loads(line) for line in (CORPUS / "secrets.jsonl").read_text("utf-8").splitlines()]
    caught = sum(
        1 for row in rows if any(row["secret"] in v or v in row["secret"]
                                 for p in plugins for v in p.analyze_string(row["text"]))
    )  # fmt: skip
    return [
        {
            "benchmark": "detect-secrets regex plugins, 20 ordinary messages (median)",
            "value": _median_us(scan(ORDINARY), rounds),
            "unit": "µs",
            "target": "comparison",
            "reference": f"import {import_ms:.0f} ms",
        },
        {
            "benchmark": "detect-secrets catch rate on the labelled corpus",
            "value": 100 * caught / len(rows),
            "unit": "%",
            "target": "≥ 95 %",
            "reference": f"{len(rows)} secrets",
        },
    ]


def run(quick: bool) -> list[dict[str, Any]]:
    rounds = 500 if quick else 5_000
    redactor = Redactor()
    rows = [json.loads(line) for line in (CORPUS / "secrets.jsonl").read_text("utf-8").splitlines()]
    caught = sum(1 for row in rows if row["secret"] not in redactor.redact(row["text"]))
    return [
        {
            "benchmark": "redact 20 ordinary chat messages (median)",
            "value": _median_us(_ours(ORDINARY), rounds),
            "unit": "µs",
            "target": "< 1,000 µs",
            "reference": "n/a (no redaction)",
        },
        {
            "benchmark": "redact 20 messages, 10 holding secrets (median)",
            "value": _median_us(_ours(_with_secrets()), rounds),
            "unit": "µs",
            "target": "< 1,000 µs",
            "reference": "n/a",
        },
        {
            "benchmark": "memfold.redact catch rate on the labelled corpus",
            "value": 100 * caught / len(rows),
            "unit": "%",
            "target": "≥ 95 %",
            "reference": f"{len(rows)} secrets",
        },
        *_detect_secrets_rows(max(50, rounds // 10)),
    ]
