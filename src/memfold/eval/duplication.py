"""How much of an injected memory block says something twice (pure).

The block is cut into statements: each fact line, each ``avoid:`` note, and each clause
of a summary line ("- Work: Is a data engineer; Uses dbt" holds two). A statement that
repeats another, or is contained in a longer one ("Is a data engineer" inside "Is a data
engineer at Zalando"), adds nothing: its tokens are duplicated tokens. The share is
duplicated tokens / tokens of the whole block.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Duplication", "duplication"]

_FACT_LINE = re.compile(r"^- \[[^\]|]*\|[^\]]*\] (?P<text>.*?)(?: \(avoid: (?P<avoid>.*)\))?$")
_SUMMARY_LINE = re.compile(r"^- [^:：]{1,40}[:：] (?P<text>.*)$")
_CLAUSE = re.compile(r"\s*[;；]\s*")
_PUNCT = re.compile(r"[\W_]+")
#: Shorter statements are names and labels ("Alice"), not sentences that can repeat.
MIN_CONTAINED_CHARS = 8


@dataclass(frozen=True, slots=True)
class Duplication:
    """Tokens of the block, tokens of statements that repeat another, and those statements."""

    tokens: int
    duplicated_tokens: int
    repeated: tuple[str, ...]

    @property
    def share(self) -> float:
        return self.duplicated_tokens / self.tokens if self.tokens else 0.0


def _statements(block: str) -> list[str]:
    found: list[str] = []
    for raw in block.splitlines():
        line = raw.strip()
        fact = _FACT_LINE.match(line)
        if fact:
            found.append(fact.group("text"))
            if fact.group("avoid"):
                found.append(fact.group("avoid"))
            continue
        summary = _SUMMARY_LINE.match(line)
        if summary:
            found.extend(c for c in _CLAUSE.split(summary.group("text")) if c)
    return found


def _key(statement: str) -> str:
    return _PUNCT.sub(" ", unicodedata.normalize("NFKC", statement).casefold()).strip()


def duplication(block: str, count: Callable[[str], int]) -> Duplication:
    """Measure the repeated statements of an injected block with the token ``count``."""
    statements = _statements(block)
    keys = [_key(s) for s in statements]
    repeated: list[str] = []
    kept: set[int] = set()
    # longest first: a statement is kept unless an earlier-kept one holds it
    for index in sorted(range(len(keys)), key=lambda i: (-len(keys[i]), i)):
        key = keys[index]
        holder = next(
            (
                j
                for j in kept
                if keys[j] == key or (len(key) >= MIN_CONTAINED_CHARS and key in keys[j])
            ),
            None,
        )
        if holder is None:
            kept.add(index)
        else:
            repeated.append(statements[index])
    return Duplication(
        tokens=count(block),
        duplicated_tokens=sum(count(s) for s in repeated),
        repeated=tuple(repeated),
    )
