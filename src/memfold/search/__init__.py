"""Search over a scope's facts, and the relevance order that injection uses.

``Searcher`` ranks facts against a query with BM25 over CJK-aware terms (``_terms``), and,
when an ``Embedder`` is configured, fuses that with cosine similarity of embeddings
(``embeddings``). ``Memory.search`` and ``Memory.context(query=...)`` call it.
"""

from memfold.search.embeddings import Embedder, EmbeddingError, OpenAIEmbeddings, make_embedder
from memfold.search.lexical import LexicalIndex
from memfold.search.searcher import (
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    Searcher,
    SearchHit,
    check_search_args,
)

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_SEARCH_LIMIT",
    "Embedder",
    "EmbeddingError",
    "LexicalIndex",
    "OpenAIEmbeddings",
    "SearchHit",
    "Searcher",
    "check_search_args",
    "make_embedder",
]
