"""Token counting: what a second, native counter (quicktok-v1) would buy over tiktoken.

memfold 0.1.0 counted with quicktok's native encoder (after a start-up self-check against
tiktoken) and read the tables from the quicktok-v1 wheel, which pulls in numpy. Now it
counts with tiktoken only, from tables shipped in memfold, loaded on the first count.
This compares the two engines on the same texts when quicktok is installed
(``pip install quicktok-v1`` to reproduce the comparison); without it only tiktoken's
figures are printed.

.venv/bin/python benchmarks/run.py tokens
"""

from __future__ import annotations

import importlib.util
import statistics
import time
from pathlib import Path
from typing import Any

from memfold import tokens
from memfold.tokens import TokenCounter

TEXTS = {
    "fact line, 66 chars": "- [preference | 0.90] Prefers concise answers without disclaimers\n",
    "8,000 chars English": (
        "I work as a data engineer at Zalando and we are migrating the warehouse to "
        "Snowflake. " * 100
    )[:8000],
    "2,000 chars Chinese": ("我叫王伟，是一名产品经理，住在上海。以后都用中文回答！" * 80)[:2000],
}


def _median_us(count: Any, text: str, repeats: int) -> float:
    times = []
    for i in range(repeats):
        sample = f"{text}{i}"  # a new string each time: nothing is cached
        started = time.perf_counter()
        count(sample)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def _size_mb(package: str) -> float | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6


def run(quick: bool) -> list[dict[str, Any]]:
    repeats = 30 if quick else 300
    rows: list[dict[str, Any]] = []
    loads = []
    for _ in range(2 if quick else 5):
        started = time.perf_counter()
        counter = TokenCounter("cl100k_base")
        loads.append(time.perf_counter() - started)
    rows.append(
        {
            "benchmark": "load + verify cl100k table (first count only; lazy)",
            "value": statistics.median(loads) * 1000,
            "unit": "ms",
            "target": "not at start-up",
            "reference": "0.1.0: 243 ms at every start",
        }
    )
    tiktoken_count = counter._count_uncached
    fast = None
    if importlib.util.find_spec("quicktok") is not None:
        import quicktok

        fast = quicktok.get_encoding("cl100k_base")
    for label, text in TEXTS.items():
        ours = _median_us(tiktoken_count, text, repeats)
        rows.append(
            {
                "benchmark": f"count {label}, tiktoken (uncached)",
                "value": ours,
                "unit": "µs",
                "target": "",
                "reference": "",
            }
        )
        if fast is not None:
            theirs = _median_us(lambda s: len(fast.encode_ordinary(s)), text, repeats)
            rows.append(
                {
                    "benchmark": f"count {label}, quicktok (uncached)",
                    "value": theirs,
                    "unit": "µs",
                    "target": "",
                    "reference": f"saves {ours - theirs:,.0f} µs",
                }
            )
    shipped = sum(p.stat().st_size for p in tokens._data_dir().glob("*.gz")) / 1e6
    rows.append(
        {
            "benchmark": "memfold's shipped tables (gzip, both encodings)",
            "value": shipped,
            "unit": "MB",
            "target": "",
            "reference": "",
        }
    )
    for package in ("numpy", "quicktok"):
        size = _size_mb(package)
        rows.append(
            {
                "benchmark": f"{package} installed size (not a dependency any more)",
                "value": -1.0 if size is None else size,
                "unit": "MB",
                "target": "",
                "reference": "not installed" if size is None else "",
            }
        )
    return rows
