"""Build :class:`~memfold.history.ChangeEvent` records from what apply and edits did.

``from_changes`` describes an extraction (apply's changes, the turns it read);
``from_diff`` a person's edit or an import, by comparing the document before and after;
``cleared`` a clear. Every text an event carries goes through ``scrub`` (the redactor),
which is idempotent on text redacted before. Pure: no IO, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from memfold._text import terms
from memfold.apply import Change
from memfold.forgetting import held_out
from memfold.history import Actor, ChangeEvent, EventKind
from memfold.model import SUMMARY_SECTIONS, Fact, MemoryDocument, Message, Summary, message_key

__all__ = [
    "EXCERPT_CHARS",
    "MAX_MESSAGE_KEYS",
    "at_recall",
    "cleared",
    "from_changes",
    "from_diff",
    "imported",
]

#: Longest excerpt of the user's words an event keeps.
EXCERPT_CHARS = 160
#: Most message keys one event lists (a fact with no clear source names every turn).
MAX_MESSAGE_KEYS = 20

Scrub = Callable[[str], str] | None

_KIND: dict[str, EventKind] = {
    "added": "added",
    "removed": "removed",
    "superseded": "superseded",
    "updated": "edited",
    "evicted": "evicted",
    "summary_changed": "summary",
}


def _clean(text: str | None, scrub: Scrub) -> str | None:
    if text is None:
        return None
    return scrub(text) if scrub is not None and text else text


def at_recall(event: ChangeEvent, scrub: Scrub) -> ChangeEvent:
    """``event`` with its texts redacted again (events written before a redaction pattern
    existed are redacted when read, like ``context()`` and ``export()`` do)."""
    if scrub is None:
        return event
    redacted = replace(
        event,
        before=_clean(event.before, scrub),
        after=_clean(event.after, scrub),
        excerpt=_clean(event.excerpt, scrub),
        reason=_clean(event.reason, scrub) or "",
    )
    return event if redacted == event else redacted


def _excerpt(text: str, wanted: frozenset[str]) -> str:
    """Up to ``EXCERPT_CHARS`` of ``text`` on one line, around its first wanted term."""
    flat = " ".join(text.split())
    if len(flat) <= EXCERPT_CHARS:
        return flat
    folded = flat.casefold()
    hits = [folded.find(term) for term in wanted]
    first = min((h for h in hits if h >= 0), default=0)
    start = max(0, min(first - EXCERPT_CHARS // 3, len(flat) - EXCERPT_CHARS))
    piece = flat[start : start + EXCERPT_CHARS].strip()
    return ("…" if start > 0 else "") + piece + ("…" if start + EXCERPT_CHARS < len(flat) else "")


def _evidence(content: str, turns: Sequence[Message]) -> tuple[tuple[str, ...], str | None]:
    """The user messages a fact most likely comes from, and an excerpt of the best one.

    The best message shares the most content terms with the fact; with no overlap (a
    translation, a paraphrase) every user turn is named and the latest one quoted.
    """
    users = [m for m in turns if m.role == "user"]
    if not users:
        return (), None
    wanted = terms(content)
    scored = [(len(wanted & terms(m.content)), i) for i, m in enumerate(users)]
    best_score, best = max(scored)
    if best_score > 0:
        message = users[best]
        return (message_key(message),), _excerpt(message.content, wanted)
    keys = tuple(message_key(m) for m in users[-MAX_MESSAGE_KEYS:])
    return keys, _excerpt(users[-1].content, wanted)


def from_changes(
    changes: Sequence[Change],
    *,
    at: str,
    extractor: str,
    thread_id: str | None,
    turns: Sequence[Message],
    scrub: Scrub = None,
) -> tuple[ChangeEvent, ...]:
    """Events for what an extraction changed (skipped items are not history)."""
    events: list[ChangeEvent] = []
    for change in changes:
        kind = _KIND.get(change.kind)
        if kind is None:
            continue
        actor: Actor = "system" if kind == "evicted" else "extraction"
        keys: tuple[str, ...] = ()
        excerpt: str | None = None
        if kind in ("added", "summary"):
            keys, excerpt = _evidence(change.content, turns)
        before = change.before
        after: str | None = change.content
        if kind in ("removed", "evicted", "superseded"):
            before, after = change.content, None
        events.append(
            ChangeEvent(
                kind=kind,
                at=at,
                actor=actor,
                fact_id=change.fact_id,
                section=change.section,
                before=_clean(before, scrub),
                after=_clean(after, scrub),
                category=change.category,
                reason="" if kind == "added" else change.reason,
                extractor=extractor,
                thread_id=thread_id,
                message_keys=keys,
                excerpt=_clean(excerpt, scrub),
                replaced_by=change.replaced_by,
                replaces=change.replaces,
            )
        )
    return _link_successor_content(events)


def _link_successor_content(events: list[ChangeEvent]) -> tuple[ChangeEvent, ...]:
    """A superseded fact's event carries its successor's content as ``after``."""
    contents = {e.fact_id: e.after for e in events if e.kind == "added" and e.fact_id}
    return tuple(
        replace(e, after=contents[e.replaced_by])
        if e.kind == "superseded" and e.replaced_by in contents
        else e
        for e in events
    )


def _edit_reason(old: Fact, new: Fact) -> str:
    parts = []
    if old.content != new.content:
        parts.append("content")
    if old.category != new.category:
        parts.append(f"category {old.category} → {new.category}")
    if old.confidence != new.confidence:
        parts.append(f"confidence {old.confidence:.2f} → {new.confidence:.2f}")
    return "edited by hand: " + ", ".join(parts)


def _summary_reason(was: Summary | None, now: Summary | None) -> str | None:
    """Why a section changed as a side effect of forgetting; None when it did not."""
    was_text = "" if was is None else was.summary
    now_text = "" if now is None else now.summary
    was_held = was is not None and held_out(was) is not None
    hold = None if now is None else held_out(now)
    if was_text == now_text and was_held == (hold is not None):
        return None
    if hold is not None:
        why = "held out of injection: it still mentions removed " + ", ".join(
            repr(r) for r in hold.removed
        )
        return why if was_text == now_text else "rebuilt without the removed content; " + why
    if was_held and was_text == now_text:
        return "released: injected again"
    return "rebuilt without the removed content"


def from_diff(
    before: MemoryDocument,
    after: MemoryDocument,
    *,
    at: str,
    actor: Actor,
    gone: tuple[EventKind, str] = ("removed", "deleted by hand"),
    new: tuple[EventKind, str] = ("added", ""),
    summary_reason: str | None = None,
    scrub: Scrub = None,
) -> tuple[ChangeEvent, ...]:
    """Events for the difference of two documents.

    Facts that disappeared get ``gone`` (kind, reason), facts that appeared ``new``,
    facts whose content, category or confidence changed ``edited``; a summary section
    whose text or hold-out changed gets ``summary`` with ``summary_reason`` (None: the
    change was forgetting's, and the reason says whether it was rebuilt or held out).
    """
    events: list[ChangeEvent] = []
    old_facts = {f.id: f for f in before.facts}
    new_ids = {f.id for f in after.facts}
    gone_actor: Actor = "system" if gone[0] == "evicted" else actor
    for fact in before.facts:
        if fact.id not in new_ids:
            events.append(
                ChangeEvent(
                    kind=gone[0], at=at, actor=gone_actor, fact_id=fact.id,
                    before=_clean(fact.content, scrub), category=fact.category, reason=gone[1],
                )
            )  # fmt: skip
    for fact in after.facts:
        previous = old_facts.get(fact.id)
        if previous is None:
            events.append(
                ChangeEvent(
                    kind=new[0], at=at, actor=actor, fact_id=fact.id,
                    after=_clean(fact.content, scrub), category=fact.category, reason=new[1],
                    thread_id=None if fact.is_manual else fact.source,
                )
            )  # fmt: skip
        elif (previous.content, previous.category, previous.confidence) != (
            fact.content, fact.category, fact.confidence,
        ):  # fmt: skip
            events.append(
                ChangeEvent(
                    kind="edited", at=at, actor=actor, fact_id=fact.id,
                    before=_clean(previous.content, scrub), after=_clean(fact.content, scrub),
                    category=fact.category, reason=_edit_reason(previous, fact),
                )
            )  # fmt: skip
    for section in SUMMARY_SECTIONS:
        was, now = before.summaries.get(section), after.summaries.get(section)
        why = _summary_reason(was, now)
        if why is None:
            continue
        events.append(
            ChangeEvent(
                kind="summary", at=at, actor=actor, section=section,
                before=_clean("" if was is None else was.summary, scrub),
                after=_clean("" if now is None else now.summary, scrub),
                reason=summary_reason or why,
            )
        )  # fmt: skip
    return tuple(events)


def imported(
    before: MemoryDocument, after: MemoryDocument, *, at: str, scrub: Scrub = None
) -> tuple[ChangeEvent, ...]:
    """Events of an import that replaced ``before`` with ``after``: the old facts not
    imported again are removed, every imported fact is ``imported``, sections that
    changed get ``summary``, and one scope-wide ``imported`` event says what happened."""
    kept = {f.id for f in after.facts}
    old = {f.id: f for f in before.facts}
    events = [
        ChangeEvent(
            kind="removed", at=at, actor="import", fact_id=f.id, before=_clean(f.content, scrub),
            category=f.category, reason="replaced by an import",
        )
        for f in before.facts
        if f.id not in kept
    ]  # fmt: skip
    events.extend(
        ChangeEvent(
            kind="imported", at=at, actor="import", fact_id=f.id,
            before=_clean(old[f.id].content, scrub) if f.id in old else None,
            after=_clean(f.content, scrub), category=f.category,
            thread_id=None if f.is_manual else f.source,
        )
        for f in after.facts
    )  # fmt: skip
    events.extend(
        e
        for e in from_diff(
            before, after, at=at, actor="import", summary_reason="imported", scrub=scrub
        )
        if e.kind == "summary"
    )
    events.append(
        ChangeEvent(
            kind="imported", at=at, actor="import",
            reason=f"replaced {len(before.facts)} facts with {len(after.facts)} imported ones",
        )
    )  # fmt: skip
    return tuple(events)


def cleared(document: MemoryDocument, *, at: str) -> ChangeEvent:
    """The event of a ``clear``: how much was forgotten (the texts are not repeated)."""
    summaries = sum(1 for s in document.summaries.values() if s.summary.strip())
    return ChangeEvent(
        kind="cleared",
        at=at,
        actor="manual",
        reason=f"cleared {len(document.facts)} facts and {summaries} summaries",
    )
