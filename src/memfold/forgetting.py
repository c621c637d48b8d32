"""Forgetting reaches the summaries: a fact that leaves memory leaves what is injected.

When a fact is deleted, edited, evicted or superseded, its old content may still sit in
one of the six summaries (memfold 0.1.0's rule extractor built them from fact clauses, a
person may list facts in one, an LLM writes prose that repeats them). ``forget`` handles
each summary in two steps:

1. **Rebuild.** A clause of the summary that *is* the old fact (same ``dedup_key``) is
   dropped, or replaced by the new content for an edit or a supersession.
2. **Hold out.** If what is left still mentions the old content (a content term of it
   that the replacement does not share), the section is *held out*: it stays stored but
   is not injected until it is rewritten without that content (by the next extraction,
   which is told what was removed, or by a person with ``set_summary``).

Holding out is deliberately eager (any distinctive word of the removed fact counts);
releasing is lenient (a rewrite may mention a word that a live fact supports). Pure: no
IO, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from memfold._facts import dedup_key
from memfold._text import terms
from memfold.model import Fact, Summary

__all__ = [
    "HELD_OUT_KEY",
    "Gone",
    "HoldOut",
    "SummaryChange",
    "forget",
    "held_out",
    "release",
    "without_hold",
]

#: Key in ``Summary.extra`` (so in the stored section) marking a held-out summary.
HELD_OUT_KEY = "heldOut"

# Clause boundaries: ; and CJK stops anywhere, a full stop before a space or the end.
# One character each, no quantifier: linear on any input.
_CLAUSES = re.compile(r"([;；。！？\n]|[.!?](?=\s|$))")
_TRAILING = " \t;；,，"


@dataclass(frozen=True, slots=True)
class Gone:
    """A fact's content that left memory; ``replacement`` is what took its place."""

    fact_id: str
    content: str
    replacement: str | None = None


@dataclass(frozen=True, slots=True)
class HoldOut:
    """Why a section is held out: the removed contents it still mentions, and since when."""

    removed: tuple[str, ...]
    since: str


@dataclass(frozen=True, slots=True)
class SummaryChange:
    """What forgetting did to one section (for apply's changes and the history)."""

    section: str
    before: str
    after: str
    reason: str


def held_out(summary: Summary) -> HoldOut | None:
    """The section's hold-out, or None when it may be injected."""
    raw = summary.extra.get(HELD_OUT_KEY)
    if not isinstance(raw, Mapping):
        return None
    removed = raw.get("removed")
    items = tuple(str(r) for r in removed) if isinstance(removed, Sequence) else ()
    since = raw.get("since")
    return HoldOut(items, since if isinstance(since, str) else "")


def without_hold(summary: Summary) -> Summary:
    """The summary with its hold-out lifted (a person or a clean rewrite vouched for it)."""
    if HELD_OUT_KEY not in summary.extra:
        return summary
    extra = {k: v for k, v in summary.extra.items() if k != HELD_OUT_KEY}
    return replace(summary, extra=MappingProxyType(extra))


def _with_hold(summary: Summary, hold: HoldOut) -> Summary:
    record = MappingProxyType({"removed": hold.removed, "since": hold.since})
    return replace(summary, extra=MappingProxyType({**summary.extra, HELD_OUT_KEY: record}))


def _quote(items: Collection[str]) -> str:
    return ", ".join(repr(item) for item in items)


def _rebuild(text: str, gone: Sequence[Gone]) -> str:
    """``text`` without the clauses that are gone facts (replaced where one took over)."""
    parts = _CLAUSES.split(text)
    clauses = parts[0::2]
    separators = [*parts[1::2], ""]
    keys = [dedup_key(c) for c in clauses]
    changed = False
    for item in gone:
        old = dedup_key(item.content)
        new = dedup_key(item.replacement) if item.replacement else ""
        for index, key in enumerate(keys):
            if key != old or not key:
                continue
            changed = True
            if item.replacement and new not in keys:
                lead = clauses[index][: len(clauses[index]) - len(clauses[index].lstrip())]
                clauses[index] = lead + item.replacement.strip()
                keys[index] = new
            else:
                clauses[index] = ""
                keys[index] = ""
    if not changed:
        return text
    kept = [(c, s) for c, s in zip(clauses, separators, strict=True) if c.strip()]
    if not kept:
        return ""
    out = "".join(c + s for c, s in kept[:-1]) + kept[-1][0]
    last_separator = kept[-1][1].strip()
    if last_separator and last_separator[0] in ".!?。！？":
        out += last_separator
    return out.strip().rstrip(_TRAILING)


def _mentions(text: str, gone: Sequence[Gone]) -> list[str]:
    """The gone contents that ``text`` still mentions (eagerly: any distinctive term)."""
    found = terms(text)
    mentioned: list[str] = []
    for item in gone:
        distinctive = terms(item.content) - terms(item.replacement or "")
        if distinctive & found and item.content not in mentioned:
            mentioned.append(item.content)
    return mentioned


def forget(
    summaries: Mapping[str, Summary], gone: Sequence[Gone], *, now_iso: str
) -> tuple[dict[str, Summary], list[SummaryChange]]:
    """Rebuild or hold out every section that carries content of a ``gone`` fact."""
    out = dict(summaries)
    changes: list[SummaryChange] = []
    if not gone:
        return out, changes
    for section, summary in summaries.items():
        text = summary.summary
        if not text.strip():
            continue
        rebuilt = _rebuild(text, gone)
        updated = summary
        reasons: list[str] = []
        if rebuilt != text:
            updated = replace(updated, summary=rebuilt, updated_at=now_iso)
            reasons.append(f"rebuilt without removed {_quote([g.content for g in gone])}")
        previous = held_out(summary)
        found = terms(rebuilt)
        # what an earlier hold-out named and this text still mentions stays held
        carried = [r for r in (previous.removed if previous else ()) if terms(r) & found]
        mentioned = _mentions(rebuilt, gone) if rebuilt.strip() else []
        removed = tuple(dict.fromkeys([*carried, *mentioned]))
        if removed:
            since = previous.since if previous and previous.since else now_iso
            if previous is None or removed != previous.removed:
                updated = _with_hold(updated, HoldOut(removed, since))
            if mentioned:
                reasons.append(
                    f"held out of injection: it still mentions removed {_quote(mentioned)}"
                )
        elif previous is not None:
            updated = without_hold(updated)
            reasons.append("no longer mentions removed content; injected again")
        if updated is not summary:
            out[section] = updated
            changes.append(SummaryChange(section, text, rebuilt, "; ".join(reasons)))
    return out, changes


def release(
    summaries: Mapping[str, Summary], sections: Collection[str], live: Sequence[Fact]
) -> tuple[dict[str, Summary], list[SummaryChange]]:
    """Lift the hold-out of ``sections`` (just rewritten) that no longer mention what was
    removed; a word a live fact carries may stay (the fact supports it)."""
    out = dict(summaries)
    changes: list[SummaryChange] = []
    supported: set[str] = set()
    for fact in live:
        supported |= terms(fact.content)
    for section in sections:
        summary = summaries.get(section)
        hold = None if summary is None else held_out(summary)
        if summary is None or hold is None:
            continue
        found = terms(summary.summary)
        still = tuple(r for r in hold.removed if (terms(r) - supported) & found)
        if still == hold.removed:
            continue
        text = summary.summary
        if still:
            out[section] = _with_hold(summary, HoldOut(still, hold.since))
            reason = f"rewritten; still held out: it mentions removed {_quote(still)}"
        else:
            out[section] = without_hold(summary)
            reason = "rewritten without the removed content; injected again"
        changes.append(SummaryChange(section, text, text, reason))
    return out, changes
