"""A person's edits to a memory document: add, edit and delete facts, set a summary.

Pure like ``apply``: no IO, no clock (``now`` is passed in). These are the rules behind
``Memory.add_fact``/``edit_fact``/``delete_fact``/``set_summary``. A fact a person adds or
edits is manual (``source = MANUAL_SOURCE``): a person vouched for it, so ``apply`` removes
it only on an explicit correction and the cap evicts it last. A fact's old content that
an edit, a deletion or an eviction removes also leaves the summaries
(``memfold.forgetting``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from types import MappingProxyType

from memfold._facts import (
    DEFAULT_CATEGORY,
    category_problem,
    check_aware,
    check_max_facts,
    dedup_key,
    eviction_order,
    iso,
    normalise_confidence,
    unique_id,
)
from memfold.errors import DuplicateFactError, FactNotFoundError
from memfold.forgetting import Gone, forget, without_hold
from memfold.model import MANUAL_SOURCE, SUMMARY_SECTIONS, Fact, MemoryDocument, Summary

__all__ = [
    "ORIGINAL_SOURCE_KEY",
    "SECTION_ALIASES",
    "add_fact",
    "delete_fact",
    "edit_fact",
    "section_name",
    "set_summary",
]

#: Key in ``Fact.extra`` (and so in the stored fact) that keeps the source an automatic
#: fact had before a person edited it and made it manual.
ORIGINAL_SOURCE_KEY = "originalSource"


def _check_content(content: object) -> str:
    text = content.strip() if isinstance(content, str) else ""
    if not text or not dedup_key(text):
        raise ValueError(f"content={content!r}: a fact needs non-empty text")
    return text


def _check_category(category: object, scrub: Callable[[str], str] | None = None) -> str:
    """A person's category as stored; never echoed back, as it may hold what they typed by
    mistake (a password).

    Raises:
        ValueError: it is not a short label (see ``category_problem``) or holds a secret.
    """
    if not isinstance(category, str):
        raise ValueError(f"category must be a string, got {type(category).__name__}")
    label = " ".join(category.lower().split()) or DEFAULT_CATEGORY
    problem = category_problem(label)
    if problem is None and scrub is not None and scrub(label) != label:
        problem = "a category may not hold a secret"
    if problem is not None:
        raise ValueError(
            f"category ({len(category)} characters) rejected: {problem}; use a label such "
            "as 'preference' or 'work'"
        )
    return label


def _check_confidence(confidence: object) -> float:
    number = normalise_confidence(confidence)
    if number is None or number != confidence:
        raise ValueError(f"confidence={confidence!r}: must be a number between 0 and 1")
    return number


def _check_unique(
    document: MemoryDocument, content: str, *, ignore: str | None, scope: object
) -> None:
    key = dedup_key(content)
    for fact in document.facts:
        if fact.id != ignore and dedup_key(fact.content) == key:
            raise DuplicateFactError(content, fact.id, scope)


def add_fact(
    document: MemoryDocument,
    content: str,
    *,
    category: str = DEFAULT_CATEGORY,
    confidence: float = 0.9,
    now: datetime,
    new_id: Callable[[], str] | None = None,
    max_facts: int = 100,
    scope: object = None,
    scrub: Callable[[str], str] | None = None,
) -> tuple[MemoryDocument, Fact]:
    """Add a fact by hand (``source = MANUAL_SOURCE``, protected from automatic removal).

    At the cap, the least trusted (then oldest) non-manual facts make room; manual facts
    are never evicted to make room for another manual fact. ``scope`` only names the
    memory in error messages; ``scrub`` (a redactor) refuses a category holding a secret.

    Raises:
        ValueError: empty content, a category that is not a short label, a confidence
            outside [0, 1], a naive ``now``, or the cap is reached and every fact was
            added by hand.
        DuplicateFactError: a fact with the same content (see ``dedup_key``) exists.
        FactIdError: ``new_id`` keeps returning taken or invalid ids.
    """
    check_aware(now)
    check_max_facts(max_facts)
    text = _check_content(content)
    number = _check_confidence(confidence)
    _check_unique(document, text, ignore=None, scope=scope)
    excess = len(document.facts) + 1 - max_facts
    evicted: set[str] = set()
    if excess > 0:
        victims = [f for f in eviction_order(document.facts, set()) if not f.is_manual]
        if len(victims) < excess:
            raise ValueError(
                f"max_facts={max_facts} reached and the facts are all manual; "
                "delete a fact or raise max_facts"
            )
        evicted = {f.id for f in victims[:excess]}
    now_iso = iso(now)
    fact = Fact(
        id=unique_id({f.id for f in document.facts}, new_id),
        content=text,
        category=_check_category(category, scrub),
        confidence=number,
        created_at=now_iso,
        updated_at=now_iso,
        source=MANUAL_SOURCE,
    )
    facts = [f for f in document.facts if f.id not in evicted] + [fact]
    gone = [Gone(f.id, f.content) for f in document.facts if f.id in evicted]
    summaries, _ = forget(document.summaries, gone, now_iso=now_iso)
    return document.with_changes(facts=facts, summaries=summaries, last_updated=now_iso), fact


def edit_fact(
    document: MemoryDocument,
    fact_id: str,
    *,
    content: str | None = None,
    category: str | None = None,
    confidence: float | None = None,
    now: datetime,
    scope: object = None,
    scrub: Callable[[str], str] | None = None,
) -> tuple[MemoryDocument, Fact]:
    """Change a fact's content, category or confidence (``None`` keeps the field).

    The fact keeps its id and creation time; ``updatedAt`` becomes ``now``. An edited
    fact becomes manual, as a person vouched for it; an automatic fact's old source is
    kept in ``extra[ORIGINAL_SOURCE_KEY]``. When nothing actually changes, the document
    is returned as it was. ``scope`` only names the memory in error messages.

    Raises:
        FactNotFoundError: no fact has this id.
        DuplicateFactError: the new content duplicates another fact.
        ValueError: empty content, a category that is not a short label, a confidence
            outside [0, 1], or a naive ``now``.
    """
    check_aware(now)
    old = document.fact(fact_id)
    if old is None:
        raise FactNotFoundError(fact_id, scope)
    new_content = old.content
    if content is not None:
        new_content = _check_content(content)
        _check_unique(document, new_content, ignore=fact_id, scope=scope)
    new_category = old.category if category is None else _check_category(category, scrub)
    new_confidence = old.confidence if confidence is None else _check_confidence(confidence)
    if (new_content, new_category, new_confidence) == (old.content, old.category, old.confidence):
        return document, old
    now_iso = iso(now)
    extra = old.extra
    if not old.is_manual:
        extra = MappingProxyType({**old.extra, ORIGINAL_SOURCE_KEY: old.source})
    new = replace(
        old,
        content=new_content,
        category=new_category,
        confidence=new_confidence,
        updated_at=now_iso,
        source=MANUAL_SOURCE,
        extra=extra,
    )
    facts = [new if f.id == fact_id else f for f in document.facts]
    summaries = document.summaries
    if new_content != old.content:
        summaries, _ = forget(summaries, [Gone(fact_id, old.content, new_content)], now_iso=now_iso)
    return document.with_changes(facts=facts, summaries=summaries, last_updated=now_iso), new


def delete_fact(
    document: MemoryDocument,
    fact_id: str,
    *,
    scope: object = None,
    now: datetime | None = None,
) -> MemoryDocument:
    """Remove a fact by id (manual or not: this is the user's explicit wish).

    ``now``, when given, becomes the document's ``lastUpdated``.

    Raises:
        FactNotFoundError: no fact has this id.
        ValueError: ``now`` is naive.
    """
    old = document.fact(fact_id)
    if old is None:
        raise FactNotFoundError(fact_id, scope)
    if now is not None:
        check_aware(now)
    facts = [f for f in document.facts if f.id != fact_id]
    stamp = iso(now) if now is not None else document.last_updated
    summaries, _ = forget(document.summaries, [Gone(fact_id, old.content)], now_iso=stamp)
    return document.with_changes(facts=facts, summaries=summaries, last_updated=stamp)


#: Short names people type for the six sections (``memfold summary edit work``).
SECTION_ALIASES: dict[str, str] = {
    "work": "workContext",
    "personal": "personalContext",
    "focus": "topOfMind",
    "current": "topOfMind",
    "recent": "recentMonths",
    "earlier": "earlierContext",
    "background": "longTermBackground",
}


def section_name(section: object) -> str:
    """The stored name of a summary section, from it or a short alias (case-insensitive).

    Raises:
        ValueError: not a section; the message lists the names.
    """
    if isinstance(section, str):
        wanted = section.strip()
        for name in SUMMARY_SECTIONS:
            if wanted.casefold() == name.casefold():
                return name
        alias = SECTION_ALIASES.get(wanted.casefold())
        if alias is not None:
            return alias
    names = ", ".join(SUMMARY_SECTIONS)
    aliases = ", ".join(f"{short} ({name})" for short, name in SECTION_ALIASES.items())
    raise ValueError(f"section={section!r}: not a summary section; use one of {names} or {aliases}")


def set_summary(
    document: MemoryDocument, section: str, text: str, *, now: datetime
) -> MemoryDocument:
    """Replace one summary's text by hand ("" empties it); lifts a hold-out.

    Returns the document unchanged when the text and hold-out state are the same.

    Raises:
        ValueError: an unknown section, text that is not a string, or a naive ``now``.
    """
    check_aware(now)
    name = section_name(section)
    if not isinstance(text, str):
        raise ValueError(f"text={text!r}: a summary is a string ('' empties the section)")
    clean = text.strip()
    current = document.summaries.get(name)
    base = current if current is not None else Summary()
    if current is not None and current.summary == clean and without_hold(current) is current:
        return document
    now_iso = iso(now)
    summary = replace(without_hold(base), summary=clean, updated_at=now_iso)
    summaries = {**document.summaries, name: summary}
    return document.with_changes(summaries=summaries, last_updated=now_iso)
