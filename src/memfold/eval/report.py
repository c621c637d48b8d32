"""Print an evaluation: a table of recall, precision and invented facts (overall, per
language, per category, per tag), then the misses, the invented and unexpected facts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memfold.eval.run import Evaluation
from memfold.eval.score import INVENTED, UNEXPECTED, Figures, Report

__all__ = ["evaluation_to_dict", "format_evaluation"]

_HEADER = (
    f"{'':<22}{'convs':>6}{'expected':>9}{'found':>6}{'recall':>8}"
    f"{'stored':>8}{'correct':>8}{'precision':>10}{'invented':>9}{'unexpected':>11}"
)


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _row(label: str, f: Figures) -> str:
    return (
        f"{label:<22}{f.conversations:>6}{f.expected:>9}{f.found:>6}{_ratio(f.recall):>8}"
        f"{f.stored:>8}{f.correct:>8}{_ratio(f.precision):>10}{f.invented:>9}{f.unexpected:>11}"
    )


def _section(title: str, rows: Mapping[str, Figures], prefix: str = "") -> list[str]:
    return [title, *(_row(f"  {prefix}{k}", v) for k, v in rows.items())] if rows else []


def format_evaluation(evaluation: Evaluation, *, corpus: str = "", limit: int = 50) -> str:
    """The report as text; at most ``limit`` lines per list (misses, invented, …)."""
    report = evaluation.report
    lines = [
        f"extraction quality of the {evaluation.extractor} extractor"
        + (f" on {corpus}" if corpus else ""),
        f"{report.overall.conversations} conversations, {report.overall.expected} expected "
        f"facts, {sum(1 for r in report.results if r.conversation.has_traps)} with traps; "
        f"{evaluation.seconds * 1000:.0f} ms for {evaluation.messages} messages "
        f"({evaluation.seconds_per_1000_messages * 1000:.0f} ms per 1,000)",
        "",
        _HEADER,
        _row("all", report.overall),
        *_section("language", report.by_language),
        *_section("category (expected / stored)", report.by_category),
        *_section("tag", report.by_tag),
    ]
    matched = report.overall.found
    if matched:
        agree = matched - len(report.category_mismatches)
        lines.append(f"category agrees for {agree} of {matched} found facts")
    lines += _listing(report, limit)
    return "\n".join(lines) + "\n"


def _listing(report: Report, limit: int) -> list[str]:
    lines: list[str] = []

    def block(title: str, items: list[str]) -> None:
        if not items:
            return
        lines.extend(["", f"{title} ({len(items)}):"])
        lines.extend(f"  {item}" for item in items[:limit])
        if len(items) > limit:
            lines.append(f"  … {len(items) - limit} more")

    misses = []
    for r in report.results:
        stored = "; ".join(f.content for f in r.facts) or "nothing"
        for item in r.misses:
            misses.append(
                f"{r.conversation.id:<18} {item.category or '':<11} {item.label}"
                f"  [stored: {stored}]"
            )
    block("missed", misses)
    block(
        "invented (a trap's terms)",
        [f"{cid:<18} {f.category:<11} {f.content}" for cid, f in report.facts_with(INVENTED)],
    )
    block(
        "unexpected (not labelled)",
        [f"{cid:<18} {f.category:<11} {f.content}" for cid, f in report.facts_with(UNEXPECTED)],
    )
    block(
        "category differs (expected → stored)",
        [
            f"{cid:<18} {e.category} → {f.category}: {f.content}"
            for cid, e, f in report.category_mismatches
        ],
    )
    block(
        "speaks as the user (my, I, 我)",
        [f"{cid:<18} {f.content}" for cid, f in report.first_person],
    )
    block("failed", [f"{cid:<18} {error}" for cid, error in report.failed])
    return lines


def _figures_dict(f: Figures) -> dict[str, Any]:
    return {
        "conversations": f.conversations,
        "expected": f.expected,
        "found": f.found,
        "recall": f.recall,
        "stored": f.stored,
        "correct": f.correct,
        "precision": f.precision,
        "invented": f.invented,
        "unexpected": f.unexpected,
    }


def evaluation_to_dict(evaluation: Evaluation) -> dict[str, Any]:
    """The report as JSON-ready data (``memfold eval extraction --json``)."""
    report = evaluation.report
    return {
        "extractor": evaluation.extractor,
        "seconds": evaluation.seconds,
        "messages": evaluation.messages,
        "overall": _figures_dict(report.overall),
        "by_language": {k: _figures_dict(v) for k, v in report.by_language.items()},
        "by_category": {k: _figures_dict(v) for k, v in report.by_category.items()},
        "by_tag": {k: _figures_dict(v) for k, v in report.by_tag.items()},
        "conversations": [
            {
                "id": r.conversation.id,
                "facts": [
                    {"content": f.content, "category": f.category, "verdict": v}
                    for f, v in zip(r.facts, r.verdicts, strict=True)
                ],
                "missed": [m.label for m in r.misses],
                "error": r.error,
            }
            for r in report.results
        ],
    }
