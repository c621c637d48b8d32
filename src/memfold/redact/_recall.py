"""Redaction at recall: a stored document with its fact contents, corrections and
summaries redacted, for the rendered ``<user_memory>`` block and for exports.

Text stored before a pattern existed, or imported from another system, never went
through the write-side redaction; scrubbing on the way out lets a newly learned
pattern protect old data without rewriting it (DESIGN rule 7: stored items are not
rewritten behind the user's back).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache

from memfold.model import Fact, MemoryDocument

Scrub = Callable[[str], str]


def cached_scrub(scrub: Scrub, maxsize: int = 8192) -> Scrub:
    """``scrub`` memoised per text: facts repeat across revisions, so re-rendering a
    document after one fact changed redacts only that fact."""
    return lru_cache(maxsize=maxsize)(scrub)


def redact_document(document: MemoryDocument, scrub: Scrub | None) -> MemoryDocument:
    """``document`` with every fact content, correction and summary passed through
    ``scrub`` (the same object when nothing changed or ``scrub`` is None)."""
    if scrub is None:
        return document
    facts = tuple(redact_fact(fact, scrub) for fact in document.facts)
    summaries = {
        name: summary if (text := scrub(summary.summary)) == summary.summary
        else replace(summary, summary=text)
        for name, summary in document.summaries.items()
    }  # fmt: skip
    facts_changed = any(a is not b for a, b in zip(facts, document.facts, strict=True))
    summaries_changed = any(summaries[n] is not s for n, s in document.summaries.items())
    if not facts_changed and not summaries_changed:
        return document
    return document.with_changes(facts=facts, summaries=summaries)


def redact_fact(fact: Fact, scrub: Scrub | None) -> Fact:
    """``fact`` with its content and correction passed through ``scrub`` (the same
    object when nothing changed)."""
    if scrub is None:
        return fact
    content = scrub(fact.content)
    error = scrub(fact.source_error) if fact.source_error else fact.source_error
    if content == fact.content and error == fact.source_error:
        return fact
    return replace(fact, content=content, source_error=error)
