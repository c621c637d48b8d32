"""Run memfold's benchmarks and print one table.

    .venv/bin/python benchmarks/run.py            # everything
    .venv/bin/python benchmarks/run.py render     # only modules whose name contains "render"
    .venv/bin/python benchmarks/run.py --quick    # fewer repetitions (smoke run)

Each ``benchmarks/bench_*.py`` module exposes ``run(quick: bool) -> list[Row]``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path
from typing import TypedDict

HERE = Path(__file__).resolve().parent


class Row(TypedDict):
    benchmark: str
    value: float
    unit: str
    target: str
    reference: str


def _fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.4f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="substrings of benchmark module names")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    rows: list[Row] = []
    for path in sorted(HERE.glob("bench_*.py")):
        if args.only and not any(word in path.stem for word in args.only):
            continue
        started = time.perf_counter()
        module = importlib.import_module(path.stem)
        rows.extend(module.run(args.quick))
        print(f"# {path.stem}: {time.perf_counter() - started:.1f}s", file=sys.stderr)
    headers = ("benchmark", "value", "unit", "target", "reference system")
    table = [
        (r["benchmark"], _fmt(r["value"]), r["unit"], r["target"], r["reference"]) for r in rows
    ]
    widths = [
        max(len(h), *(len(t[i]) for t in table)) if table else len(h) for i, h in enumerate(headers)
    ]
    print(" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("-|-".join("-" * w for w in widths))
    for line in table:
        print(" | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
