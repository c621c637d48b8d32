"""Text the ``memfold history``, ``why``, ``summary`` and ``context --explain`` commands
print: plain functions of the typed results, so every CLI layout can reuse them."""

from __future__ import annotations

from memfold.context_report import REASONS, ContextItem, ContextReport
from memfold.forgetting import held_out
from memfold.history import ChangeEvent, FactProvenance
from memfold.inject import SECTION_LABELS
from memfold.model import SUMMARY_SECTIONS, MemoryDocument

__all__ = ["SECTION_TITLES", "event_line", "provenance_text", "report_table", "summaries_text"]

SECTION_TITLES = SECTION_LABELS
_TEXT_CHARS = 70


def _short(text: str | None, limit: int = _TEXT_CHARS) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _actor(event: ChangeEvent) -> str:
    return f"{event.actor}/{event.extractor}" if event.extractor else event.actor


def event_line(event: ChangeEvent) -> str:
    """``2026-12-01T10:00:00Z  r7  superseded  fact_1  extraction/rules  'old' → 'new' …``"""
    subject = event.fact_id or (event.section and SECTION_TITLES.get(event.section, event.section))
    parts = [event.at, f"r{event.revision}", event.kind, subject or "(memory)", _actor(event)]
    if event.before is not None and event.after is not None and event.before != event.after:
        parts.append(f"{_short(event.before, 40)!r} → {_short(event.after, 40)!r}")
    elif event.after is not None or event.before is not None:
        parts.append(repr(_short(event.after if event.after is not None else event.before)))
    if event.replaced_by:
        parts.append(f"replaced by {event.replaced_by}")
    if event.replaces:
        parts.append(f"replaces {', '.join(event.replaces)}")
    if event.reason and event.kind != "added":
        parts.append(f"({_short(event.reason, 80)})")
    if event.redactions:
        parts.append(f"<redacted: {', '.join(event.redactions)}>")
    if event.thread_id:
        parts.append(f"[thread {event.thread_id}]")
    return "  ".join(parts)


def provenance_text(found: FactProvenance) -> str:
    """Where a fact came from and what happened to it, for ``memfold why``."""
    lines = [f"{found.fact_id}: {found.content!r} ({found.status})"]
    origin = found.origin
    if origin is not None:
        how = _actor(origin) if origin.kind == "added" else "imported"
        lines.append(f"  from: {how} at {origin.at}, thread {origin.thread_id or '-'}")
        if origin.excerpt:
            lines.append(f"  the user said: {origin.excerpt!r}")
        if origin.message_keys:
            lines.append(f"  messages: {', '.join(origin.message_keys)}")
    else:
        lines.append(
            f"  from: thread {found.thread_id or '-'} at {found.created_at or '?'} "
            "(recorded before the kept history)"
        )
    for ref in found.supersedes:
        lines.append(f"  superseded: {ref.fact_id} {ref.content!r}")
    if found.superseded_by is not None:
        ref = found.superseded_by
        lines.append(f"  superseded by: {ref.fact_id} {ref.content!r}")
    if found.changes:
        lines.append("  changes (oldest first):")
        lines.extend(f"    {event_line(e)}" for e in found.changes)
    return "\n".join(lines)


def _item_row(item: ContextItem) -> tuple[str, ...]:
    label = item.id if item.kind == "fact" else SECTION_TITLES.get(item.id, item.id)
    what = item.content if item.kind == "summary" else f"[{item.category}] {item.content}"
    why = REASONS.get(item.reason, item.reason)
    if item.detail:
        why = f"{why}: {item.detail}"
    return (
        "in" if item.included else "out",
        item.kind,
        label,
        str(item.tokens),
        item.reason,
        _short(what, 50),
        _short(why, 80) if not item.included else "",
    )


def report_table(report: ContextReport) -> str:
    """``memfold context --explain``: the block's size, then one row per item."""
    rows = [_item_row(i) for i in (*report.included, *report.dropped)]
    head = [
        f"{report.tokens} of {report.budget} tokens; guaranteed categories used "
        f"{report.guaranteed_used} of {report.guaranteed_budget}; "
        f"{len(report.included)} included, {len(report.dropped)} dropped"
    ]
    if not rows:
        return head[0] + "\n(memory is empty)"
    titles = ("", "kind", "id", "tokens", "reason", "content", "why")
    widths = [max(len(t), *(len(r[i]) for r in rows)) for i, t in enumerate(titles)]
    table = [titles, *rows]
    body = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    return "\n".join(head + body)


def summaries_text(document: MemoryDocument, sections: tuple[str, ...] = SUMMARY_SECTIONS) -> str:
    """The summary sections (held-out ones marked) for ``memfold summary show``."""
    lines = []
    for name in sections:
        summary = document.summaries.get(name)
        text = "" if summary is None else summary.summary
        hold = None if summary is None or not text else held_out(summary)
        mark = ""
        if hold is not None:
            mark = "  [held out: mentions removed " + ", ".join(repr(r) for r in hold.removed)
            mark += "; edit it to inject it again]"
        lines.append(f"{name} ({SECTION_TITLES[name]}): {text or '(empty)'}{mark}")
    return "\n".join(lines)
