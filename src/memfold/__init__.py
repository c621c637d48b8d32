"""memfold: long-term memory of users for LLM agents.

from memfold import Memory, MemoryConfig

with Memory(MemoryConfig(home="./.memfold")) as mem:
    mem.record(messages, thread_id="t1", user_id="alice")
    prompt = mem.context(user_id="alice")
"""

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
from memfold.memory import Memory
from memfold.model import Fact, MemoryDocument, Scope, Summary
from memfold.queue.base import QueueStatus
from memfold.search import Embedder, EmbeddingError, SearchHit
from memfold.updater import UpdateResult

__version__ = "0.1.0"

__all__ = [
    "ChangeEvent",
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
