"""One row of the table ``benchmarks/run.py`` prints."""

from __future__ import annotations

from typing import Any


def row(
    name: str, value: float, unit: str, target: str = "", reference: str = ""
) -> dict[str, Any]:
    """A benchmark row: what was measured, the figure, its unit, the target and the
    reference system's figure (or where it comes from)."""
    return {
        "benchmark": name,
        "value": value,
        "unit": unit,
        "target": target,
        "reference": reference,
    }
