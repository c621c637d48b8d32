"""Secret redaction: cost per recorded conversation, catch rate on both labelled corpora,
linear time on hostile text, and the cost of redacting at recall in the renderer.

.venv/bin/python benchmarks/run.py redact

1. A 20-message ordinary technical conversation (code, versions, SHAs, URLs, Chinese),
   redacted message by message as ``Memory.record`` does. Target: well under 1 ms.
2. The same conversation with a secret in every other message.
3. Catch rate and false positives on corpus 1 (hand-written) and on corpus 2
   (``tests/security/corpus/generate.py``: provider formats in several languages), its
   tuned part and its held-out third side by side. Targets: ≥ 98 %, 0 false positives.
4. Hostile inputs (the two quadratic shapes of 0.1.0 and floods of every detector's
   trigger words) at 100 kB and 1 MB: the time ratio shows linear growth (≈ 10).
5. ``ContextRenderer`` with and without the recall scrub (200-fact document).
6. If ``detect-secrets`` or ``betterleaks`` is installed: their catch rates on corpus 2.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memfold.inject import ContextRenderer
from memfold.model import Fact, Scope
from memfold.redact import Redactor
from memfold.tokens import get_counter

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "security" / "corpus"
GENERATED = CORPUS / "generated"

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
            "benchmark": "detect-secrets catch rate on corpus 1",
            "value": 100 * caught / len(rows),
            "unit": "%",
            "target": "≥ 95 %",
            "reference": f"{len(rows)} secrets",
        },
    ]


def _rows(name: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in (GENERATED / name).read_text("utf-8").splitlines()]


def _leaks(secret: str, redacted: str) -> bool:
    redacted = re.sub(r"\[REDACTED:[a-z0-9_]+\]", "[R]", redacted)  # labels name providers
    n = min(8, len(secret))
    return any(secret[i : i + n] in redacted for i in range(len(secret) - n + 1))


def _corpus2(name: str, redact: Callable[[str], str]) -> list[dict[str, Any]]:
    out = []
    for part in ("tuned", "heldout"):
        secrets = _rows(f"secrets_{part}.jsonl")
        ordinary = _rows(f"ordinary_{part}.jsonl")
        caught = sum(1 for r in secrets if not _leaks(r["secret"], redact(r["text"])))
        false = sum(1 for r in ordinary if redact(r["text"]) != r["text"])
        out.append(
            {
                "benchmark": f"{name}: corpus 2 {part}, caught / false positives",
                "value": 100 * caught / len(secrets),
                "unit": "%",
                "target": "≥ 98 % / 0",
                "reference": f"{caught}/{len(secrets)} secrets, {false}/{len(ordinary)} FP",
            }
        )
    return out


def _others_on_corpus2() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    try:
        import betterleaks  # type: ignore[import-not-found]

        def bl(text: str) -> str:
            for finding in betterleaks.scan_string(text):
                if finding.secret:
                    text = text.replace(finding.secret, "[X]")
            return text

        rows += _corpus2("betterleaks (embedded rules)", bl)
    except ImportError:
        pass
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings

        def ds(text: str) -> str:
            for line in text.split("\n"):
                for found in scan_line(line):
                    if found.secret_value:
                        text = text.replace(found.secret_value, "[X]")
            return text

        with default_settings():
            rows += _corpus2("detect-secrets (scan_line, default plugins)", ds)
    except ImportError:
        pass
    return rows


HOSTILE_UNITS = (
    "api_key=", "password ", "pass=", "密码", "https://", "a:a@", "Authorization: ",
    "-----BEGIN PRIVATE KEY-----", "eyJa.", "sk-", "1 ", "DE00 ", "login a / ", "$env:",
)  # fmt: skip


def _hostile(size: int) -> dict[str, str]:
    texts = {
        "0.1.0 quadratic: 密码是a + '!' run": "密码是a" + "!" * size + "a",
        "0.1.0 quadratic: 'a.' run + ' ://'": "a." * (size // 2) + " ://",
    }
    for unit in HOSTILE_UNITS:
        texts[f"flood of {unit.strip()!r}"] = (unit * (size // len(unit) + 1))[:size]
    return texts


def _hostile_rows() -> list[dict[str, Any]]:
    redactor = Redactor(emails=True, phones=True)
    small, large = _hostile(100_000), _hostile(1_000_000)
    rows = []
    for name, text in large.items():
        started = time.perf_counter()
        redactor.redact(small[name])
        t_small = time.perf_counter() - started
        started = time.perf_counter()
        redactor.redact(text)
        t_large = time.perf_counter() - started
        rows.append(
            {
                "benchmark": f"hostile 1 MB: {name}",
                "value": t_large * 1000,
                "unit": "ms",
                "target": "< 1,000 ms",
                "reference": f"100 kB {t_small * 1000:.0f} ms, ×{t_large / t_small:.1f}",
            }
        )
    return rows


def _render_rows(rounds: int) -> list[dict[str, Any]]:
    from bench_render import document

    counter = get_counter("cl100k_base")
    doc = document()
    scope = Scope("alice")
    out = []
    for label, scrub in (("without", None), ("with", Redactor())):
        renderer = ContextRenderer(counter, max_tokens=2000, scrub=scrub)
        renderer.render(scope, doc)
        warm = _median_us(lambda r=renderer: r.render(scope, doc), rounds)
        revisions = []
        for revision in range(2, 202):
            facts = list(doc.facts)
            facts[revision % 200] = Fact(facts[revision % 200].id, f"Changed in {revision}")
            revisions.append(doc.with_changes(revision=revision, facts=facts))
        started = time.perf_counter()
        for version in revisions:
            renderer.render(scope, version)
        cold = (time.perf_counter() - started) / len(revisions) * 1e6
        out += [
            {"benchmark": f"render warm, {label} recall redaction", "value": warm,
             "unit": "µs", "target": "≤ 100 µs", "reference": "cached block"},
            {"benchmark": f"render cold (1 fact changed), {label} recall redaction",
             "value": cold, "unit": "µs", "target": "≤ 1,000 µs", "reference": "200 facts"},
        ]  # fmt: skip
    return out


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
            "benchmark": "memfold.redact catch rate on corpus 1 (hand-written)",
            "value": 100 * caught / len(rows),
            "unit": "%",
            "target": "≥ 95 %",
            "reference": f"{len(rows)} secrets",
        },
        *_corpus2("memfold.redact", redactor.redact),
        *_render_rows(max(200, rounds // 5)),
        *([] if quick else _hostile_rows()),
        *_detect_secrets_rows(max(50, rounds // 10)),
        *_others_on_corpus2(),
    ]
