"""memfold: long-term memory of users for LLM agents.

from memfold import Memory, MemoryConfig

with Memory(MemoryConfig(home="./.memfold")) as mem:
    mem.record(messages, thread_id="t1", user_id="alice")
    prompt = mem.context(user_id="alice")

The names below are imported on first use (PEP 562), so ``import memfold`` and the
``memfold`` command start without loading pydantic or the storage and queue code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memfold._audit import ErasureReport
    from memfold.config import EmbeddingsConfig, LLMConfig, MemoryConfig
    from memfold.context_report import ContextItem, ContextReport
    from memfold.errors import (
        ConfigError,
        ConflictError,
        CorruptMemoryError,
        DuplicateFactError,
        ExtractionError,
        FactNotFoundError,
        MemfoldError,
        StorageError,
    )
    from memfold.history import ChangeEvent, FactProvenance, FactRef
    from memfold.llm.base import ChatModelError
    from memfold.memory import Memory
    from memfold.model import Fact, MemoryDocument, Scope, Summary
    from memfold.queue.base import QueueStatus
    from memfold.search import Embedder, EmbeddingError, SearchHit
    from memfold.updater import UpdateResult

__version__ = "0.1.0"

_WHERE = {
    "ErasureReport": "memfold._audit",
    "ContextItem": "memfold.context_report",
    "ContextReport": "memfold.context_report",
    "ChangeEvent": "memfold.history",
    "FactProvenance": "memfold.history",
    "FactRef": "memfold.history",
    "EmbeddingsConfig": "memfold.config",
    "LLMConfig": "memfold.config",
    "MemoryConfig": "memfold.config",
    "ConfigError": "memfold.errors",
    "ConflictError": "memfold.errors",
    "CorruptMemoryError": "memfold.errors",
    "DuplicateFactError": "memfold.errors",
    "ExtractionError": "memfold.errors",
    "FactNotFoundError": "memfold.errors",
    "MemfoldError": "memfold.errors",
    "StorageError": "memfold.errors",
    "ChatModelError": "memfold.llm.base",
    "Memory": "memfold.memory",
    "Fact": "memfold.model",
    "MemoryDocument": "memfold.model",
    "Scope": "memfold.model",
    "Summary": "memfold.model",
    "QueueStatus": "memfold.queue.base",
    "Embedder": "memfold.search",
    "EmbeddingError": "memfold.search",
    "SearchHit": "memfold.search",
    "UpdateResult": "memfold.updater",
}

__all__ = [
    "ChangeEvent",
    "ChatModelError",
    "ConfigError",
    "ConflictError",
    "ContextItem",
    "ContextReport",
    "CorruptMemoryError",
    "DuplicateFactError",
    "Embedder",
    "EmbeddingError",
    "EmbeddingsConfig",
    "ErasureReport",
    "ExtractionError",
    "Fact",
    "FactNotFoundError",
    "FactProvenance",
    "FactRef",
    "LLMConfig",
    "MemfoldError",
    "Memory",
    "MemoryConfig",
    "MemoryDocument",
    "QueueStatus",
    "Scope",
    "SearchHit",
    "StorageError",
    "Summary",
    "UpdateResult",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'memfold' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
