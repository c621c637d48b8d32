"""BM25 over a scope's facts: an in-process inverted index, built once per document.

A fact's text is its content plus its category, with the category's name in English and
Chinese for the built-in categories, so "what are my goals" or "我的目标" finds goals.
A query word of at least ``MIN_PREFIX`` letters also matches the longer words it begins
and the shorter ones that begin it (``postgres`` and ``postgresql``), at a discount.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence

from memfold.model import Fact
from memfold.search._terms import MIN_PREFIX, terms

__all__ = ["CATEGORY_WORDS", "LexicalIndex"]

#: Extra words a built-in category is found by (a custom category is found by its name).
CATEGORY_WORDS: dict[str, str] = {
    "preference": "preference 偏好 喜好",
    "knowledge": "knowledge 知识 技能",
    "context": "context 背景 情况",
    "behavior": "behavior behaviour habit 习惯 行为",
    "goal": "goal plan 目标 计划",
    "correction": "correction 纠正 更正",
}

_K1 = 1.2
_B = 0.75
#: Weight of a prefix match relative to an exact one.
_PREFIX_WEIGHT = 0.6


class LexicalIndex:
    """BM25 (k1 = 1.2, b = 0.75) over ``facts``; immutable once built."""

    __slots__ = ("_idf", "_norms", "_postings", "_vocab", "facts")

    def __init__(self, facts: Sequence[Fact]) -> None:
        self.facts: tuple[Fact, ...] = tuple(facts)
        postings: dict[str, list[tuple[int, int]]] = {}  # term → [(fact index, tf)]
        lengths: list[int] = []
        for doc, fact in enumerate(self.facts):
            category = fact.category.lower()
            words = terms(f"{fact.content} {CATEGORY_WORDS.get(category, category)}")
            lengths.append(len(words))
            for term, tf in Counter(words).items():
                postings.setdefault(term, []).append((doc, tf))
        count = len(self.facts)
        self._postings = postings
        average = (sum(lengths) / count) if count else 1.0
        #: the length normalisation of each fact's term frequencies
        self._norms = [_K1 * (1.0 - _B + _B * length / (average or 1.0)) for length in lengths]
        self._idf = {
            term: math.log(1.0 + (count - len(p) + 0.5) / (len(p) + 0.5))
            for term, p in postings.items()
        }
        self._vocab = sorted(postings)

    def __len__(self) -> int:
        return len(self.facts)

    def scores(self, query: str) -> dict[int, float]:
        """BM25 score of every fact that shares a term with ``query`` (fact index → score)."""
        weights = self._query_weights(query)
        scores: dict[int, float] = {}
        norms = self._norms
        for term, weight in weights.items():
            gain = self._idf[term] * weight * (_K1 + 1.0)
            for doc, tf in self._postings[term]:
                scores[doc] = scores.get(doc, 0.0) + gain * tf / (tf + norms[doc])
        return scores

    def _query_weights(self, query: str) -> dict[str, float]:
        """Index terms the query matches, with their weight (1 exact, less for a prefix);
        a query term repeated counts once per occurrence."""
        weights: dict[str, float] = {}
        for term in terms(query):
            for match, weight in self._matches(term):
                weights[match] = weights.get(match, 0.0) + weight
        return weights

    def _matches(self, term: str) -> list[tuple[str, float]]:
        found = [(term, 1.0)] if term in self._postings else []
        if len(term) < MIN_PREFIX or not term.isascii():
            return found
        vocab = self._vocab
        start = bisect.bisect_right(vocab, term)
        for index in range(start, len(vocab)):
            longer = vocab[index]
            if not longer.startswith(term):
                break
            found.append((longer, _PREFIX_WEIGHT))
        for size in range(MIN_PREFIX, len(term)):
            shorter = term[:size]
            if shorter in self._postings:
                found.append((shorter, _PREFIX_WEIGHT))
        return found
