"""Decide what of an extractor's change set lands in a memory document.

``apply`` is a pure function: no IO, no clock (``ApplyContext.now`` is passed in). It holds
the update rules (REFERENCE.md defects 4, 6, 7): one bad item never sinks the others, removals
are guarded (clean parse, manual facts only on a correction, never losing a fact whose
replacement failed), new facts are thresholded, scrubbed and de-duplicated, and the fact
cap never trims a fact added in the same update in favour of an equally trusted old one.
What a model sends is evidence, not truth (rule 13): ``memfold._guards`` drops placeholders,
echoes of the prompt and the assistant's words, and removals without a reason or a related
replacement or turn, each counted as a skipped change.
A removal with a replacement *supersedes* the old fact (a ``superseded`` change linked to
its successor, which the history keeps). Whatever leaves memory leaves the summaries too
(``memfold.forgetting``: rebuilt, or held out of injection until rewritten). A person's
edits (``add_fact``, ``edit_fact``, ``delete_fact``) live in ``memfold.edits``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal

from memfold._facts import (
    FactIdError,
    check_aware,
    check_max_facts,
    dedup_key,
    eviction_order,
    iso,
    normalise_category,
    normalise_confidence,
    unique_id,
)
from memfold._guards import Evidence, content_problem, removal_problem, sentences
from memfold.extract.base import ChangeSet, FactRemoval, NewFact, SummaryUpdate
from memfold.forgetting import Gone, SummaryChange, forget, release
from memfold.model import SUMMARY_SECTIONS, Fact, MemoryDocument, Message, Signals, Summary
from memfold.redact import is_only_redaction

__all__ = [
    "ApplyContext",
    "ApplyResult",
    "Change",
    "ChangeKind",
    "FactIdError",
    "apply",
    "dedup_key",
]

ChangeKind = Literal[
    "added", "removed", "superseded", "updated", "evicted", "summary_changed", "skipped"
]


@dataclass(frozen=True)
class ApplyContext:
    """Everything ``apply`` needs besides the document and the change set.

    Raises:
        ValueError: ``now`` is naive, ``max_facts`` < 1, or the threshold is outside [0, 1].
    """

    now: datetime
    thread_id: str | None
    signals: Signals = field(default_factory=Signals)
    max_facts: int = 100
    confidence_threshold: float = 0.7
    new_id: Callable[[], str] | None = None
    #: Redacts secrets in new and changed items only, never in stored ones (rule 7).
    scrub: Callable[[str], str] | None = None
    #: What the extractor saw, for the guards of rule 13 (``memfold._guards``): the prompt's
    #: fixed instructions, and the turns (None: unknown, the turn-based checks are skipped).
    instructions: tuple[str, ...] = ()
    turns: tuple[Message, ...] | None = None

    def __post_init__(self) -> None:
        check_aware(self.now)
        check_max_facts(self.max_facts)
        threshold = self.confidence_threshold
        if not (isinstance(threshold, int | float) and 0.0 <= threshold <= 1.0):
            raise ValueError(
                f"confidence_threshold={threshold!r}: must be a number between 0 and 1"
            )


@dataclass(frozen=True)
class Change:
    """One thing ``apply`` did (or declined to do, ``kind="skipped"``), for logs, counts
    and the change history.

    ``content`` is the fact's content (the old one for a removal) or the section's new
    text; ``before`` the section's text before a summary change. A ``superseded`` fact
    names its successor in ``replaced_by``; an ``added`` fact lists in ``replaces`` the
    facts it superseded.
    """

    kind: ChangeKind
    fact_id: str | None
    section: str | None
    content: str
    reason: str
    before: str | None = None
    category: str | None = None
    replaced_by: str | None = None
    replaces: tuple[str, ...] = ()


@dataclass(frozen=True)
class ApplyResult:
    document: MemoryDocument
    changes: tuple[Change, ...]

    @property
    def changed(self) -> bool:
        """True iff summaries or facts changed (a no-op update need not be committed)."""
        return any(change.kind != "skipped" for change in self.changes)


# --- uploads ---------------------------------------------------------------------------

_FILE_NOUNS = (
    r"(?:files?|documents?|docs?|images?|pictures?|pdfs?|attachments?|screenshots?"
    r"|photos?|spreadsheets?|csvs?|slides?|zips?|archives?)"
)
_FILE_NOUNS_ZH = r"(?:文件|文档|图片|附件|照片|截图|表格|压缩包|PDF|pdf)"
# Statements about an upload *event* in a conversation. Deliberately narrow: a lasting fact
# that merely involves uploads ("Works on a file-upload service") must survive.
_UPLOAD_EVENT = re.compile(
    r"\b(?:uploaded|attached)\s+(?:a|an|the|this|that|these|those|some|several|multiple"
    r"|his|her|their|my|its|\d+|one|two|three|four|five)\s+(?:[\w-]+\s+){0,2}?"
    + _FILE_NOUNS
    + r"\b"
    + r"|\b(?:the|this|that|these|those)\s+(?:recently\s+)?uploaded\s+"
    + _FILE_NOUNS
    + r"\b"
    + r"|\b(?:uploaded|attached)\s+[\w-]+\.(?:pdf|docx?|xlsx?|pptx?|csv|txt|md|json|png|jpe?g"
    r"|gif|zip)\b"
    # "uploading a file", "by uploading the PDF", "is uploading two images"
     + r"|\b(?:uploading|attaching)\s+(?:a|an|the|this|that|these|those|some|several|multiple"
    r"|his|her|their|my|its|\d+|one|two|three|four|five)\s+(?:[\w-]+\s+){0,2}?"
    + _FILE_NOUNS
    + r"\b"
    + r"|\b(?:uploading|attaching)\s+[\w-]+\.(?:pdf|docx?|xlsx?|pptx?|csv|txt|md|json|png|jpe?g"
    r"|gif|zip)\b"
    + r"|<\s*/?\s*(?:uploaded_files|current_uploads)\s*>"
    + r"|上传(?:了|过)[^。！？!?\n]{0,8}?"
    + _FILE_NOUNS_ZH
    + r"|(?:用户|我|你|他|她)上传的[^。！？!?\n]{0,4}?"
    + _FILE_NOUNS_ZH,
    re.IGNORECASE,
)


def _text(value: object, scrub: Callable[[str], str] | None) -> str:
    """An extractor's free text (a removal reason) as kept: stripped and redacted."""
    text = value.strip() if isinstance(value, str) else ""
    return scrub(text) if scrub is not None and text else text


def _mentions_upload(content: str) -> bool:
    return _UPLOAD_EVENT.search(content) is not None


# --- apply -----------------------------------------------------------------------------


def _guarded_summary(
    section: str, text: str, old: str, evidence: Evidence, changes: list[Change]
) -> str:
    """``text`` without its sentences that are placeholders, echoes of the prompt, the
    assistant's words or upload events (each logged as a skipped change)."""
    kept: list[str] = []
    for sentence in sentences(text):
        why = content_problem(sentence, evidence, also_users=(old,))
        if why is None and _mentions_upload(sentence):
            why = "mentions a file upload (a one-off event, not a lasting fact)"
        if why is None:
            kept.append(sentence)
        else:
            changes.append(Change("skipped", None, section, sentence, f"summary sentence: {why}"))
    return _join_sentences(kept)


def _join_sentences(parts: list[str]) -> str:
    out = ""
    for part in parts:
        cjk_boundary = out and (out[-1] in "。！？" or not out[-1].isascii())
        out = f"{out}{part}" if cjk_boundary else f"{out} {part}".strip()
    return out


def _apply_summaries(
    document: MemoryDocument,
    updates: tuple[SummaryUpdate, ...],
    now_iso: str,
    scrub: Callable[[str], str] | None = None,
    evidence: Evidence | None = None,
) -> tuple[Mapping[str, Summary], list[Change]]:
    """Replace summaries; when a section is updated twice, the last valid update wins."""
    evidence = evidence or Evidence()
    summaries = dict(document.summaries)
    changes: list[Change] = []
    wanted: dict[str, str] = {}
    for update in updates:
        section = update.section
        reason = None
        text = update.summary.strip() if isinstance(update.summary, str) else ""
        text = scrub(text) if scrub is not None and text else text  # security: redact
        if section not in SUMMARY_SECTIONS:
            reason = f"unknown summary section {section!r}; known: {', '.join(SUMMARY_SECTIONS)}"
        elif update.scope != "user":
            reason = f"summary not about the user (scope={update.scope!r})"
        elif update.durability != "durable":
            reason = f"summary not durable (durability={update.durability!r})"
        elif not text:
            reason = "empty summary text (extraction never clears a section)"
        if reason is not None:
            changes.append(Change("skipped", None, section, text, reason))
            continue
        text = _guarded_summary(section, text, document.summary(section), evidence, changes)
        if not text:
            continue  # every sentence was dropped, each with its reason
        wanted.pop(section, None)  # re-insert so sections keep the order of their last update
        wanted[section] = text
    for section, text in wanted.items():
        current = summaries.get(section, Summary())
        if current.summary.strip() == text:
            continue
        summaries[section] = replace(current, summary=text, updated_at=now_iso)
        changes.append(
            Change("summary_changed", None, section, text, "summary replaced", current.summary)
        )
    return summaries, changes


def _reject_reason(item: NewFact, threshold: float) -> tuple[str, str | None, float | None]:
    """(content, reason-to-skip or None, clamped confidence)."""
    content = item.content.strip() if isinstance(item.content, str) else ""
    if item.scope is None or item.durability is None:
        return content, "unlabelled item (scope/durability missing)", None
    if item.scope != "user":
        return content, f"task-scoped item (scope={item.scope!r})", None
    if item.durability != "durable":
        return content, f"temporary item (durability={item.durability!r})", None
    if not content or not dedup_key(content):
        return content, "empty content", None
    confidence = normalise_confidence(item.confidence)
    if confidence is None:
        return content, f"confidence {item.confidence!r} is not a finite number", None
    if confidence < threshold:
        return content, f"confidence {confidence:.2f} below threshold {threshold:.2f}", None
    if _mentions_upload(content):
        return content, "mentions a file upload (a one-off event, not a lasting fact)", None
    return content, None, confidence


def _admit(
    document: MemoryDocument,
    *,
    items: tuple[NewFact, ...],
    index: dict[str, str],
    context: ApplyContext,
    now_iso: str,
    skipped: list[Change],
    evidence: Evidence,
) -> tuple[dict[int, str], dict[str, Fact], dict[str, float]]:
    """Filter, de-duplicate and create the new facts.

    Returns (new-fact position -> the id it landed as, its own or an existing duplicate's;
    the new facts by id; raised confidences of existing facts by id).
    """
    existing = {fact.id: fact for fact in document.facts}
    taken = set(existing)
    outcome: dict[int, str] = {}
    new_facts: dict[str, Fact] = {}
    raised: dict[str, float] = {}
    for position, item in enumerate(items):
        content, reason, confidence = _reject_reason(item, context.confidence_threshold)
        if context.scrub is not None and content:  # security: redact, even what is skipped
            content = context.scrub(content)
        # Checked even without a scrubber: the model saw redacted turns and may echo markers.
        if reason is None and is_only_redaction(content):
            reason = "only a redacted secret"
        if reason is None:
            reason = content_problem(content, evidence)
        if reason is not None or confidence is None:
            skipped.append(Change("skipped", None, None, content, reason or "invalid"))
            continue
        key = dedup_key(content)
        target = index.get(key)
        if target is not None:
            outcome[position] = target
            if target in new_facts:
                if confidence > new_facts[target].confidence:
                    new_facts[target] = replace(new_facts[target], confidence=confidence)
            else:
                old = existing[target]
                if not old.is_manual and confidence > raised.get(target, old.confidence):
                    raised[target] = confidence
            skipped.append(Change("skipped", target, None, content, f"duplicate of {target}"))
            continue
        fact_id = unique_id(taken, context.new_id)
        category = normalise_category(item.category, context.scrub)
        source_error = item.source_error.strip() if isinstance(item.source_error, str) else None
        if category != "correction":
            source_error = None  # what the assistant got wrong belongs to corrections only
        if context.scrub is not None and source_error:  # security: redact
            source_error = context.scrub(source_error)
        new_facts[fact_id] = Fact(
            id=fact_id,
            content=content,
            category=category,  # security: a label, scrubbed above
            confidence=confidence,
            created_at=now_iso,
            updated_at=now_iso,
            source=context.thread_id,
            source_error=source_error or None,
        )
        index[key] = fact_id
        outcome[position] = fact_id
    return outcome, new_facts, raised


def apply(document: MemoryDocument, change_set: ChangeSet, context: ApplyContext) -> ApplyResult:
    """Apply an extractor's change set to a document and say what happened.

    Never raises for bad items in the change set: each is skipped with a reason.

    Raises:
        FactIdError: ``context.new_id`` keeps returning taken or invalid ids.
    """
    now_iso = iso(context.now)
    evidence = Evidence(context.instructions, context.turns)
    summaries, summary_changes = _apply_summaries(
        document, change_set.summaries, now_iso, context.scrub, evidence
    )
    existing = {fact.id: fact for fact in document.facts}
    skipped: list[Change] = [
        Change("skipped", None, None, "", f"dropped by the reply parser: {problem}")
        for problem in change_set.dropped
    ]

    requests = _removal_requests(document, change_set, context.signals, skipped, evidence)
    unconditional = {fid for fid, r in requests.items() if r.replaced_by is None}

    # Dedup against what survives for sure; a fact whose removal waits on a replacement
    # stays in the index so an identical "replacement" is a duplicate, not a swap.
    index: dict[str, str] = {}
    for fact in document.facts:
        if fact.id not in unconditional:
            index.setdefault(dedup_key(fact.content), fact.id)

    outcome, new_facts, raised = _admit(
        document,
        items=change_set.new_facts,
        index=index,
        context=context,
        now_iso=now_iso,
        skipped=skipped,
        evidence=evidence,
    )
    current = [
        replace(f, confidence=raised[f.id], updated_at=now_iso) if f.id in raised else f
        for f in document.facts
    ]
    removed, evicted, cap_rejected = _resolve(
        current, requests, outcome, new_facts, context.max_facts
    )
    for fact_id in cap_rejected:
        fact = new_facts.pop(fact_id)
        skipped.append(
            Change(
                "skipped", None, None, fact.content,
                f"max_facts={context.max_facts} reached and every kept fact is trusted more",
            )
        )  # fmt: skip
    for fact_id, request in requests.items():
        if fact_id not in removed:
            skipped.append(
                Change(
                    "skipped", fact_id, None, existing[fact_id].content,
                    f"removal not applied: its replacement (new fact #{request.replaced_by}) "
                    "was not added",
                )
            )  # fmt: skip

    changes: list[Change] = [*summary_changes]
    kept: list[Fact] = []
    gone: list[Gone] = []
    successors: dict[str, list[str]] = {}
    for fact in current:
        if fact.id in removed:
            request = requests[fact.id]
            why = _text(request.reason, context.scrub) or "removed by the extractor"
            if request.replaced_by is None:
                changes.append(Change("removed", fact.id, None, fact.content, why, fact.content))
                gone.append(Gone(fact.id, fact.content))
                continue
            successor = outcome[request.replaced_by]
            heir = new_facts.get(successor) or next(f for f in current if f.id == successor)
            successors.setdefault(successor, []).append(fact.id)
            changes.append(
                Change(
                    "superseded", fact.id, None, fact.content, f"{why} (replaced by {successor})",
                    fact.content, fact.category, replaced_by=successor,
                )
            )  # fmt: skip
            gone.append(Gone(fact.id, fact.content, heir.content))
        elif fact.id in evicted:
            changes.append(
                Change(
                    "evicted", fact.id, None, fact.content,
                    f"over max_facts={context.max_facts}", fact.content, fact.category,
                )
            )  # fmt: skip
            gone.append(Gone(fact.id, fact.content))
        else:
            if fact.id in raised:
                changes.append(
                    Change(
                        "updated", fact.id, None, fact.content,
                        f"confidence raised to {fact.confidence:.2f} by a duplicate",
                        fact.content, fact.category,
                    )
                )  # fmt: skip
            kept.append(fact)
    for fact in new_facts.values():
        kept.append(fact)
        changes.append(
            Change(
                "added", fact.id, None, fact.content, fact.category, category=fact.category,
                replaces=tuple(successors.get(fact.id, ())),
            )
        )  # fmt: skip
    summaries, released = release(
        summaries, [c.section for c in summary_changes if c.section], kept
    )
    summaries, forgotten = forget(summaries, gone, now_iso=now_iso)
    changes.extend(_summary_change(c) for c in (*released, *forgotten))
    changes.extend(skipped)

    result = ApplyResult(document, tuple(changes))
    if not result.changed:
        return result
    updated = document.with_changes(summaries=summaries, facts=kept, last_updated=now_iso)
    return ApplyResult(updated, tuple(changes))


def _summary_change(change: SummaryChange) -> Change:
    return Change(
        "summary_changed", None, change.section, change.after, change.reason, change.before
    )


def _removal_requests(
    document: MemoryDocument,
    change_set: ChangeSet,
    signals: Signals,
    skipped: list[Change],
    evidence: Evidence,
) -> dict[str, FactRemoval]:
    """Removals that pass the guards that do not depend on which new facts land."""
    requests: dict[str, FactRemoval] = {}
    for removal in change_set.removals:
        fact = document.fact(removal.fact_id) if isinstance(removal.fact_id, str) else None
        reason: str | None
        if not change_set.removals_allowed:
            reason = "removals not allowed: the extractor's reply did not parse cleanly"
        elif fact is None:
            reason = "unknown fact id"
        elif fact.is_manual and not signals.correction:
            reason = "manual fact: removed only on an explicit correction"
        else:
            reason = _unrelated_removal(removal, fact, change_set, evidence)
        if reason is None and fact is not None:
            requests.setdefault(fact.id, removal)
            continue
        content = "" if fact is None else fact.content
        skipped.append(Change("skipped", str(removal.fact_id), None, content, reason or ""))
    return requests


def _unrelated_removal(
    removal: FactRemoval, fact: Fact, change_set: ChangeSet, evidence: Evidence
) -> str | None:
    """Why this removal is not plausibly what the user's turns ask for, or None."""
    index = removal.replaced_by
    replacement = None
    if (
        isinstance(index, int)
        and not isinstance(index, bool)
        and 0 <= index < len(change_set.new_facts)
        and isinstance(change_set.new_facts[index].content, str)
    ):
        item = change_set.new_facts[index]
        replacement = (item.content, normalise_category(item.category))
    reason = removal.reason if isinstance(removal.reason, str) else ""
    return removal_problem(
        reason=reason,
        fact_content=fact.content,
        fact_category=fact.category,
        replacement=replacement,
        evidence=evidence,
    )


def _resolve(
    current: list[Fact],
    requests: dict[str, FactRemoval],
    outcome: dict[int, str],
    new_facts: dict[str, Fact],
    max_facts: int,
) -> tuple[set[str], set[str], list[str]]:
    """Decide (removed ids, evicted ids, new ids rejected by the cap).

    A new fact the cap would trim is not added at all; that can void a removal it was the
    replacement for, bringing the old fact back, so repeat until nothing new is trimmed.
    Each round rejects at least one new fact, so this ends.
    """
    cap_rejected: list[str] = []
    while True:
        live_new = [f for fid, f in new_facts.items() if fid not in cap_rejected]
        live_ids = {f.id for f in live_new}
        removed = {
            fid
            for fid, request in requests.items()
            if _replacement_landed(
                fid,
                request=request,
                outcome=outcome,
                live_new_ids=live_ids,
                all_new_ids=set(new_facts),
                requests=requests,
            )
        }
        pool = [f for f in current if f.id not in removed] + live_new
        excess = len(pool) - max_facts
        if excess <= 0:
            return removed, set(), cap_rejected
        victims = eviction_order(pool, live_ids)[:excess]
        trimmed_new = [f.id for f in victims if f.id in live_ids]
        if not trimmed_new:
            return removed, {f.id for f in victims}, cap_rejected
        cap_rejected.extend(trimmed_new)


def _replacement_landed(
    fact_id: str,
    *,
    request: FactRemoval,
    outcome: dict[int, str],
    live_new_ids: set[str],
    all_new_ids: set[str],
    requests: dict[str, FactRemoval],
) -> bool:
    index = request.replaced_by
    if index is None:
        return True
    if isinstance(index, bool) or not isinstance(index, int):
        return False
    target = outcome.get(index)
    if target is None:
        return False
    if target in all_new_ids:
        return target in live_new_ids
    # The replacement duplicated an existing fact: fine, unless that fact is the one being
    # removed or is itself up for removal.
    return target != fact_id and target not in requests
