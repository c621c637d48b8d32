"""Hostile text: does every text-scanning family run in time linear in its input?

.venv/bin/python benchmarks/run.py hostile          # the table row per shape
.venv/bin/python benchmarks/bench_hostile.py        # the same, as its own table

Each shape is a text built to make a backtracking pattern rescan (findings D10, D11 and
shapes aimed at capture, signals and URL masking), timed through the public function at
100 KB and at 1 MB (UTF-8 bytes). Linear code takes about 10× as long for 10× the input;
a quadratic one about 100×. Every measurement runs in a child process that is killed at
its time limit, so a quadratic family reports a lower bound instead of hanging the run.
The 100 KB run also measures the longest stall of another thread (a 1 ms ticker): a
pattern that holds the GIL for seconds freezes the agent's own thread.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

SIZES = (100_000, 1_000_000)
ROUNDS = 3
LIMIT_SECONDS = 60.0
QUICK_LIMIT_SECONDS = 15.0


def _fill(unit: str, size: int, head: str = "", tail: str = "") -> str:
    """``head`` + ``unit`` repeated + ``tail``, about ``size`` UTF-8 bytes in all."""

    def size_of(text: str) -> int:
        return len(text.encode("utf-8", "surrogatepass"))

    count = max(1, (size - size_of(head) - size_of(tail)) // max(1, size_of(unit)))
    return head + unit * count + tail


#: (family, shape, builder of a text of about ``size`` bytes)
SHAPES: tuple[tuple[str, str, Callable[[int], str]], ...] = (
    ("redact", "密码是a + '!'×n + a (D10)", lambda n: _fill("!", n, "密码是a", "a")),
    ("redact", "'a.'×n + ' ://' (D10)", lambda n: _fill("a.", n, "", " ://")),
    ("redact", "ordinary log lines", lambda n: _fill("GET /api/v1/items?id=42 200 12ms\n", n)),
    ("rules", "blank lines then '>' (D11)", lambda n: _fill("\n", n, "I live in Berlin.", "> x")),
    ("rules", "code fences (D11)", lambda n: _fill("```\n", n, "I work as a nurse.\n")),
    ("rules", "ordinary prose", lambda n: _fill("I live in Berlin and I like tea. ", n)),
    ("signals", "'not ' repeated", lambda n: _fill("not ", n, "that's ")),
    ("signals", "'i meant ' repeated", lambda n: _fill("i meant ", n, "no, ")),
    ("signals", "'不是' repeated", lambda n: _fill("不是", n, "我说的")),
    ("capture", "unclosed '<uploaded_files ' tags", lambda n: _fill("<uploaded_files ", n)),
    ("capture", "'<' runs", lambda n: _fill("<", n)),
    ("capture", "cut emoji (lone surrogates)", lambda n: _fill("\ud83d ", n, "look ")),
    ("mask_url", "'a.'×n + '://'", lambda n: _fill("a.", n, "", "://")),
    ("mask_url", "'http://a:' repeated", lambda n: _fill("http://a:", n)),
)


def _target(family: str) -> Callable[[str], object]:
    """The public function a family is timed through, ready to take one text."""
    if family == "redact":
        from memfold.redact import Redactor

        return Redactor().redact
    if family == "rules":
        from memfold.extract.base import ExtractionRequest
        from memfold.extract.rules import RuleExtractor
        from memfold.model import MemoryDocument, Message

        extractor = RuleExtractor()
        return lambda text: extractor.propose(
            ExtractionRequest(
                MemoryDocument(), (Message("user", text), Message("assistant", "Noted."))
            )
        )
    if family == "signals":
        from memfold.model import Message
        from memfold.signals import detect

        return lambda text: detect((Message("user", text),))
    if family == "capture":
        from memfold.conversation import capture

        return lambda text: capture(
            [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]
        )
    if family == "mask_url":
        from memfold.config import mask_url

        return mask_url
    raise ValueError(f"unknown family {family!r}")


def _child(index: int, size: int, out: Any) -> None:
    family, _, build = SHAPES[index]
    call = _target(family)
    call("warm up the imports and caches")
    text = build(size)
    out.send("ready")  # the parent's time limit starts now, imports excluded
    stall = [0.0]
    done = threading.Event()

    def tick() -> None:
        last = time.perf_counter()
        while not done.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            stall[0] = max(stall[0], now - last)
            last = now

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    best = float("inf")
    for _ in range(ROUNDS):  # the best of a few rounds: sub-millisecond runs are noisy
        started = time.perf_counter()
        call(text)
        best = min(best, time.perf_counter() - started)
        out.send((best, stall[0]))
    done.set()
    ticker.join()


def measure(index: int, size: int, limit: float) -> tuple[float, float] | None:
    """(seconds of the best round, longest stall of another thread) for one shape and
    size; None when the first call was still running ``limit`` seconds after it started
    (the child is killed; later rounds are cut off at the limit too).

    Raises:
        RuntimeError: the child died without a result (a crash, not a slow pattern).
    """
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(index, size, send), daemon=True)
    child.start()
    try:
        if not receive.poll(120.0) or receive.recv() != "ready":
            raise RuntimeError(f"{SHAPES[index][:2]}: the child never got ready")
        result = None
        deadline = time.monotonic() + limit
        for _ in range(ROUNDS):  # keep the best round that finished within the limit
            if not receive.poll(max(0.0, deadline - time.monotonic())):
                break
            result = receive.recv()
    except EOFError as exc:
        raise RuntimeError(f"{SHAPES[index][:2]}: the child died (exit {child.exitcode})") from exc
    finally:
        if child.is_alive():
            child.kill()
        child.join()
    return result


def _rows(quick: bool) -> list[dict[str, Any]]:
    limit = QUICK_LIMIT_SECONDS if quick else LIMIT_SECONDS
    rows = []
    for index, (family, shape, _) in enumerate(SHAPES):
        small = measure(index, SIZES[0], limit)
        large = measure(index, SIZES[1], limit) if small is not None else None
        if small is None:
            ratio, note = float("inf"), f"100 KB > {limit:.0f} s (killed)"
        elif large is None:
            ratio = limit / max(small[0], 1e-6)  # a lower bound: the 1 MB call took longer
            note = (
                f"100 KB {small[0] * 1e3:,.1f} ms, 1 MB > {limit:.0f} s (killed), so the "
                f"ratio is at least {ratio:.0f}"
            )
        else:
            ratio = large[0] / max(small[0], 1e-6)
            note = f"100 KB {small[0] * 1e3:,.1f} ms, 1 MB {large[0] * 1e3:,.1f} ms"
        if small is not None:
            note += f"; other thread stalled ≤ {small[1] * 1e3:,.0f} ms at 100 KB"
        rows.append(
            {
                "benchmark": f"hostile {family}: {shape}, 1 MB / 100 KB time",
                "value": ratio,
                "unit": "×",
                "target": "≈ 10 (linear)",
                "reference": note,
            }
        )
    return rows


def run(quick: bool) -> list[dict[str, Any]]:
    return _rows(quick)


if __name__ == "__main__":
    for row in _rows("--quick" in sys.argv):
        print(f"{row['value']:>8.1f} ×  {row['benchmark']}  ({row['reference']})")
