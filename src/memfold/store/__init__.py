"""Where memory lives: the ``MemoryStore`` protocol and its backends."""

from memfold.store.base import MemoryStore
from memfold.store.factory import open_store
from memfold.store.inmemory import InMemoryStore
from memfold.store.jsonfile import JsonFileStore

__all__ = ["InMemoryStore", "JsonFileStore", "MemoryStore", "open_store"]
