"""Start-up of the ``memfold`` command: the help, and a read on a small memory.

Each figure is the median wall time of fresh ``python -m memfold.cli`` processes (so it
includes the interpreter's own start, ~20-40 ms here), and the peak RSS of those children.

.venv/bin/python benchmarks/run.py cli
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _wall(args: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, *args], capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def run(quick: bool) -> list[dict[str, Any]]:
    repeats = 3 if quick else 15
    home = Path(tempfile.mkdtemp(prefix="memfold-bench-cli-")) / "home"
    cli = ["-m", "memfold.cli", "--home", str(home)]
    subprocess.run(
        [sys.executable, *cli, "--user", "alice", "facts", "add", "Likes tea"],
        capture_output=True,
        check=True,
    )
    rows = [
        {
            "benchmark": "`memfold --help`, wall",
            "value": _wall([*cli, "--help"], repeats),
            "unit": "ms",
            "target": "< 300 ms",
            "reference": "0.1.0: 410 ms",
        },
        {
            "benchmark": "python -c 'import memfold', wall",
            "value": _wall(["-c", "import memfold"], repeats),
            "unit": "ms",
            "target": "",
            "reference": "",
        },
        {
            "benchmark": "`memfold --user alice facts list`, wall",
            "value": _wall([*cli, "--user", "alice", "facts", "list"], repeats),
            "unit": "ms",
            "target": "",
            "reference": "0.1.0: 1,210 ms, 118 MB",
        },
        {
            "benchmark": "`memfold --user alice context` (loads the token table), wall",
            "value": _wall([*cli, "--user", "alice", "context"], repeats),
            "unit": "ms",
            "target": "",
            "reference": "",
        },
    ]
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    rows.append(
        {
            "benchmark": "peak RSS of those processes",
            "value": peak_mb,
            "unit": "MB",
            "target": "",
            "reference": "0.1.0: 118 MB for facts list",
        }
    )
    return rows
