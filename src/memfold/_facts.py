"""Fact rules shared by ``apply`` (an extractor's changes) and ``edits`` (a person's).

Pure like both of its users: no IO, no clock. One definition of what makes two facts the
same (``dedup_key``), of fresh ids, timestamps and the order in which the cap evicts.
"""

from __future__ import annotations

import math
import re
import secrets
import unicodedata
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from memfold.errors import MemfoldError
from memfold.model import Fact

__all__ = [
    "DEFAULT_CATEGORY",
    "MAX_CATEGORY_CHARS",
    "MAX_CATEGORY_WORDS",
    "MAX_ID_ATTEMPTS",
    "FactIdError",
    "category_problem",
    "check_aware",
    "check_max_facts",
    "dedup_key",
    "eviction_order",
    "iso",
    "normalise_category",
    "normalise_confidence",
    "unique_id",
]

#: How many fresh ids a generator may propose before we call it broken.
MAX_ID_ATTEMPTS = 100
DEFAULT_CATEGORY = "context"
_EPOCH = datetime.min.replace(tzinfo=UTC)
_TRAILING_PUNCTUATION = ".!?,;:…‥。！？，；：、．｡､"


class FactIdError(MemfoldError, RuntimeError):
    """The fact-id generator keeps returning ids that are taken or not strings."""


def dedup_key(content: str) -> str:
    """The form two facts are compared in: NFKC, case-folded, whitespace collapsed,
    trailing sentence punctuation (ASCII and CJK) removed."""
    text = " ".join(unicodedata.normalize("NFKC", content).casefold().split())
    return text.rstrip(_TRAILING_PUNCTUATION + " ")


#: A category is a short label: at most this many characters and words.
MAX_CATEGORY_CHARS = 32
MAX_CATEGORY_WORDS = 3
_CATEGORY = re.compile(r"[^\W_][\w\- ]*")
# A word this long mixing letters and digits reads like a key or a password, not a label.
_KEY_LIKE = re.compile(r"(?=[^ ]*\d)(?=[^ ]*[^\W\d_])[\w\-]{8,}")


def category_problem(category: str) -> str | None:
    """Why ``category`` (lower-cased, whitespace collapsed) is not a label, or None.

    A category is rendered as the label of every fact and sent back to the model, so it
    must not carry text: letters, digits, spaces, ``-`` and ``_`` only, at most 32
    characters and 3 words, no redaction marker and no key-like word (security: a secret
    echoed or typed into a category would otherwise be stored and shown)."""
    if len(category) > MAX_CATEGORY_CHARS or len(category.split()) > MAX_CATEGORY_WORDS:
        return (
            f"a category is a short label (at most {MAX_CATEGORY_CHARS} characters and "
            f"{MAX_CATEGORY_WORDS} words)"
        )
    if not _CATEGORY.fullmatch(category):
        return "a category holds only letters, digits, spaces, '-' and '_'"
    if _KEY_LIKE.search(category):
        return "a category may not hold a key-like word (letters and digits mixed)"
    return None


def normalise_category(category: object, scrub: Callable[[str], str] | None = None) -> str:
    """An extractor's category as stored: lower case, whitespace collapsed, redacted by
    ``scrub``; the default when it is missing or is not a label (``category_problem``)."""
    if not isinstance(category, str):
        return DEFAULT_CATEGORY
    label = " ".join(category.lower().split())
    if scrub is not None and label:
        label = scrub(label)
    if not label or category_problem(label) is not None:
        return DEFAULT_CATEGORY
    return label


def normalise_confidence(value: object) -> float | None:
    """A confidence clamped to [0, 1], or None when it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    if not math.isfinite(number):
        return None
    return min(1.0, max(0.0, number))


def check_aware(now: datetime) -> None:
    """Raises ValueError unless ``now`` is a timezone-aware datetime."""
    if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"now={now!r}: pass a timezone-aware datetime (e.g. in UTC)")


def check_max_facts(max_facts: int) -> None:
    """Raises ValueError unless ``max_facts`` is an integer of at least 1."""
    if isinstance(max_facts, bool) or not isinstance(max_facts, int) or max_facts < 1:
        raise ValueError(f"max_facts={max_facts!r}: must be an integer of at least 1")


def iso(now: datetime) -> str:
    """The document's timestamp form: UTC, seconds, a trailing Z."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(value: str) -> datetime:
    """A fact's timestamp for ordering; unreadable or missing ones count as oldest."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return _EPOCH
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def _default_id() -> str:
    return f"fact_{secrets.token_hex(4)}"


def unique_id(taken: set[str], new_id: Callable[[], str] | None) -> str:
    """A fresh id from ``new_id`` (default ``fact_<8 hex>``), added to ``taken``.

    Raises:
        FactIdError: ``new_id`` returned ``MAX_ID_ATTEMPTS`` taken or invalid ids.
    """
    generate = new_id or _default_id
    for _ in range(MAX_ID_ATTEMPTS):
        candidate = generate()
        if isinstance(candidate, str) and candidate and candidate not in taken:
            taken.add(candidate)
            return candidate
    raise FactIdError(
        f"the fact-id generator returned {MAX_ID_ATTEMPTS} ids that were empty, not strings "
        "or already used; pass a new_id that returns unique non-empty strings"
    )


def eviction_order(facts: Iterable[Fact], new_ids: set[str]) -> list[Fact]:
    """Facts in the order the cap removes them: non-manual before manual, then lowest
    confidence, then older; a fact added now never loses a tie to an older one."""
    indexed = list(enumerate(facts))
    indexed.sort(
        key=lambda pair: (
            pair[1].is_manual,
            pair[1].confidence,
            pair[1].id in new_ids,
            _parse_time(pair[1].created_at),
            pair[0],
        )
    )
    return [fact for _, fact in indexed]
