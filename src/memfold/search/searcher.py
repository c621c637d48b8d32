"""Ranking a scope's facts against a query: BM25, fused with embeddings when configured.

``Searcher`` keeps, per scope, the lexical index of the document it last saw and the
vectors of its facts. An entry is used only while the document's facts are exactly the
ones it was built from, so an edit, a deletion or a clear can never be served stale; a
fact's vector is kept across documents only while its id and its text are unchanged.

Hybrid ranking is reciprocal-rank fusion (RRF, k = 60) of the BM25 ranking and the top
cosine matches. When the embeddings endpoint fails, the call falls back to BM25 alone,
logs a warning, and the endpoint is not tried again for ``retry_seconds``.
"""

from __future__ import annotations

import heapq
import logging
import operator
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memfold.model import Fact, Scope, fact_to_dict
from memfold.search.embeddings import Embedder, EmbeddingError, Vector, unit_vector
from memfold.search.lexical import LexicalIndex

__all__ = ["MAX_QUERY_CHARS", "MAX_SEARCH_LIMIT", "SearchHit", "Searcher", "check_search_args"]

logger = logging.getLogger("memfold.search")

#: A longer query is cut to its first and last halves of this many characters.
MAX_QUERY_CHARS = 4000
_RRF_K = 60
#: Cosine matches taken into the fusion beyond the requested ``limit``.
_SEMANTIC_CANDIDATES = 30
_QUERY_VECTORS = 512


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result: the fact and its score (higher is better; scores compare only
    within one result list: BM25 for lexical search, RRF for hybrid search)."""

    fact: Fact
    score: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"fact": {...as in an export...}, "score": 1.234567}``."""
        return {"fact": fact_to_dict(self.fact), "score": round(self.score, 6)}


@dataclass(slots=True)
class _Entry:
    facts: tuple[Fact, ...]
    index: LexicalIndex
    #: fact id → (the text that was embedded, its unit vector)
    vectors: dict[str, tuple[str, Vector]] = field(default_factory=dict)
    #: every fact's vector as one numpy matrix (rows in ``facts`` order), when numpy is there
    matrix: Any = None
    #: length of the vectors (0 before the first)
    dimensions: int = 0
    #: True when every fact has a vector for its current text
    complete: bool = False


def clip_query(query: str) -> str:
    """``query`` itself, or its head and tail when longer than ``MAX_QUERY_CHARS``."""
    if len(query) <= MAX_QUERY_CHARS:
        return query
    half = MAX_QUERY_CHARS // 2
    return f"{query[:half]} {query[-half:]}"


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:  # numpy is optional (not a dependency); without it ~20 µs per 256-d fact
        return None
    return numpy


def _dots(query: Vector, entry: _Entry, eligible: list[int]) -> list[float]:
    """The query's dot product with each eligible fact's vector (all of one length)."""
    np = _numpy()
    facts, vectors = entry.facts, entry.vectors
    if np is None or not entry.complete:
        return [sum(map(operator.mul, query, vectors[facts[i].id][1])) for i in eligible]
    matrix = entry.matrix
    if matrix is None:
        rows = [np.frombuffer(vectors[fact.id][1], dtype=np.float32) for fact in facts]
        matrix = entry.matrix = np.vstack(rows)
    if len(eligible) != len(facts):
        matrix = matrix[eligible]
    products: list[float] = (matrix @ np.frombuffer(query, dtype=np.float32)).tolist()
    return products


#: Most search results one call returns.
MAX_SEARCH_LIMIT = 1000


def check_search_args(query: object, limit: object, category: object) -> None:
    """The arguments of ``Memory.search`` (and of every face over it), checked alike.

    Raises:
        TypeError: a value of the wrong type.
        ValueError: an empty query or a limit outside 1..``MAX_SEARCH_LIMIT``.
    """
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, not {type(query).__name__}")
    if not query.strip():
        raise ValueError("query is empty: pass the words to search for, e.g. 'coffee'")
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an int, not {type(limit).__name__}")
    if not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise ValueError(f"limit={limit}: must be between 1 and {MAX_SEARCH_LIMIT}")
    if category is not None and not isinstance(category, str):
        raise TypeError(f"category must be a string or None, not {type(category).__name__}")


class Searcher:
    """Thread-safe search over documents, with bounded caches.

    ``max_scopes`` indexes are kept (least recently used out) and at most ``max_vectors``
    fact vectors across them.
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        max_scopes: int = 256,
        max_vectors: int = 20_000,
        retry_seconds: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_scopes < 1 or max_vectors < 1:
            raise ValueError(f"max_scopes={max_scopes}, max_vectors={max_vectors}: must be >= 1")
        self.embedder = embedder
        self.max_scopes = max_scopes
        self.max_vectors = max_vectors
        self.retry_seconds = retry_seconds
        self._clock = clock
        self._entries: OrderedDict[Scope, _Entry] = OrderedDict()
        self._query_vectors: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()
        self._paused_until = float("-inf")
        #: How many searches fell back to lexical ranking because embeddings failed.
        self.embedding_failures = 0

    # --- public ---------------------------------------------------------------------

    def search(
        self,
        scope: Scope,
        facts: Sequence[Fact],
        query: str,
        *,
        limit: int = 10,
        category: str | None = None,
    ) -> list[SearchHit]:
        """The ``limit`` best facts for ``query``, best first; only facts that match.

        Ties are broken by confidence, then by the newest ``createdAt``.
        """
        current = tuple(facts)
        entry = self._entry(scope, current)
        wanted = None if category is None else category.strip().lower()
        ranked = self._ranked(entry, clip_query(query), wanted, limit + _SEMANTIC_CANDIDATES)
        # the caller's facts, not the entry's: equal facts may differ in ``extra``
        return [SearchHit(current[index], score) for index, score in ranked[:limit]]

    def relevance(self, scope: Scope, facts: Sequence[Fact], query: str) -> tuple[str, ...]:
        """Ids of the facts that match ``query``, most relevant first (for injection)."""
        entry = self._entry(scope, facts)
        ranked = self._ranked(entry, clip_query(query), None, _SEMANTIC_CANDIDATES)
        return tuple(entry.facts[index].id for index, _ in ranked)

    def forget(self, scope: Scope) -> None:
        """Drop the scope's index and vectors (after a clear or when a user is forgotten)."""
        with self._lock:
            self._entries.pop(scope, None)

    def cache_len(self) -> int:
        with self._lock:
            return len(self._entries)

    def vector_count(self) -> int:
        with self._lock:
            return sum(len(entry.vectors) for entry in self._entries.values())

    # --- internals ------------------------------------------------------------------

    def _entry(self, scope: Scope, facts: Sequence[Fact]) -> _Entry:
        current = facts if isinstance(facts, tuple) else tuple(facts)
        with self._lock:
            entry = self._entries.get(scope)
            if entry is not None and (entry.facts is current or entry.facts == current):
                self._entries.move_to_end(scope)
                return entry
        vectors: dict[str, tuple[str, Vector]] = {}
        if entry is not None:
            for fact in current:
                kept = entry.vectors.get(fact.id)
                if kept is not None and kept[0] == fact.content:
                    vectors[fact.id] = kept
        fresh = _Entry(current, LexicalIndex(current), vectors)
        if vectors:
            fresh.dimensions = len(next(iter(vectors.values()))[1])
            fresh.complete = _all_embedded(fresh)
        with self._lock:
            self._entries[scope] = fresh
            self._entries.move_to_end(scope)
            self._evict()
        return fresh

    def _evict(self) -> None:
        """Called with the lock held."""
        while len(self._entries) > self.max_scopes:
            self._entries.popitem(last=False)
        total = sum(len(entry.vectors) for entry in self._entries.values())
        while total > self.max_vectors and len(self._entries) > 1:
            _, dropped = self._entries.popitem(last=False)
            total -= len(dropped.vectors)

    def _ranked(
        self, entry: _Entry, query: str, category: str | None, candidates: int
    ) -> list[tuple[int, float]]:
        """(fact index, score) of the matching facts, best first."""
        facts = entry.facts
        eligible = [
            i
            for i, fact in enumerate(facts)
            if category is None or fact.category.lower() == category
        ]
        lexical = entry.index.scores(query)
        lexical_order = _order([i for i in eligible if i in lexical], lexical, facts)
        semantic_order = self._semantic(entry, query, eligible, candidates) if eligible else None
        if semantic_order is None:
            return [(i, lexical[i]) for i in lexical_order]
        fused: dict[int, float] = {}
        for order in (lexical_order, semantic_order):
            for rank, index in enumerate(order, start=1):
                fused[index] = fused.get(index, 0.0) + 1.0 / (_RRF_K + rank)
        return [(i, fused[i]) for i in _order(list(fused), fused, facts)]

    def _semantic(
        self, entry: _Entry, query: str, eligible: list[int], candidates: int
    ) -> list[int] | None:
        """The ``candidates`` eligible facts nearest to the query by cosine, nearest first;
        None without (working) embeddings."""
        embedder = self.embedder
        if embedder is None or self._clock() < self._paused_until:
            return None
        try:
            query_vector = self._query_vector(embedder, query)
            if not entry.complete:
                self._fill(embedder, entry, eligible)
            if len(query_vector) != entry.dimensions:
                raise EmbeddingError(
                    f"the query vector has {len(query_vector)} dimensions and the facts' have "
                    f"{entry.dimensions}; the embeddings endpoint must answer with one model"
                )
        except EmbeddingError as exc:
            self._pause(exc)
            return None
        scores = _dots(query_vector, entry, eligible)
        nearest = heapq.nlargest(candidates, range(len(eligible)), key=scores.__getitem__)
        return [eligible[j] for j in nearest]

    def _fill(self, embedder: Embedder, entry: _Entry, eligible: list[int]) -> None:
        """Embed the eligible facts that have no vector for their current text."""
        facts = entry.facts
        missing = [
            facts[i]
            for i in eligible
            if (kept := entry.vectors.get(facts[i].id)) is None or kept[0] != facts[i].content
        ]
        fresh = self._embed(embedder, [fact.content for fact in missing]) if missing else []
        with self._lock:
            for fact, vector in zip(missing, fresh, strict=True):
                if entry.dimensions not in (0, len(vector)):
                    raise EmbeddingError(
                        f"the endpoint returned vectors of {entry.dimensions} and {len(vector)} "
                        "dimensions; it must answer with one model"
                    )
                entry.dimensions = len(vector)
                entry.vectors[fact.id] = (fact.content, vector)
            entry.matrix = None
            entry.complete = _all_embedded(entry)
            self._evict()

    def _query_vector(self, embedder: Embedder, query: str) -> Vector:
        key = f"{embedder.name}\0{query}"
        with self._lock:
            found = self._query_vectors.get(key)
            if found is not None:
                self._query_vectors.move_to_end(key)
                return found
        vector = self._embed(embedder, [query])[0]
        with self._lock:
            self._query_vectors[key] = vector
            while len(self._query_vectors) > _QUERY_VECTORS:
                self._query_vectors.popitem(last=False)
        return vector

    @staticmethod
    def _embed(embedder: Embedder, texts: list[str]) -> list[Vector]:
        try:
            raw = embedder.embed(texts)
        except EmbeddingError:
            raise
        except Exception as exc:  # a third-party embedder: any failure means "none now"
            raise EmbeddingError(f"{type(exc).__name__}: {exc}") from exc
        if len(raw) != len(texts):
            raise EmbeddingError(f"asked for {len(texts)} embeddings, got {len(raw)}")
        return [unit_vector(values) for values in raw]

    def _pause(self, exc: EmbeddingError) -> None:
        with self._lock:
            self.embedding_failures += 1
            self._paused_until = self._clock() + self.retry_seconds
        logger.warning(
            "memfold: embeddings unavailable (%s); search is lexical only for the next %.0f s",
            exc,
            self.retry_seconds,
        )


def _all_embedded(entry: _Entry) -> bool:
    vectors = entry.vectors
    return all(
        (kept := vectors.get(fact.id)) is not None and kept[0] == fact.content
        for fact in entry.facts
    )


def _order(indexes: list[int], scores: dict[int, float], facts: Sequence[Fact]) -> list[int]:
    """``indexes`` by score, then confidence, then newest ``createdAt`` (all descending)."""
    newest = sorted(indexes, key=lambda i: facts[i].created_at, reverse=True)
    return sorted(newest, key=lambda i: (scores[i], facts[i].confidence), reverse=True)
