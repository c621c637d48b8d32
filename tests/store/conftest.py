"""The ``store`` fixture the contract suite runs over: one parameter per backend.

Add a backend by adding an entry to ``BACKENDS`` (a function of ``tmp_path`` returning a
:class:`Backend`); every test in ``test_store_contract.py`` then runs against it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memfold.store.base import MemoryStore
from memfold.store.inmemory import InMemoryStore
from memfold.store.jsonfile import JsonFileStore


@dataclass(frozen=True)
class Backend:
    """How to open a store; ``open()`` twice gives two instances over the same data
    when the backend is ``durable``."""

    name: str
    open: Callable[[], MemoryStore]
    durable: bool


def _json(tmp_path: Path) -> Backend:
    return Backend("json", lambda: JsonFileStore(tmp_path / "home"), durable=True)


def _inmemory(tmp_path: Path) -> Backend:
    shared = InMemoryStore()
    return Backend("inmemory", lambda: shared, durable=False)


BACKENDS: dict[str, Callable[[Path], Backend]] = {"json": _json, "inmemory": _inmemory}


@pytest.fixture(params=sorted(BACKENDS))
def store_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return BACKENDS[request.param](tmp_path)


@pytest.fixture
def store(store_backend: Backend) -> Iterator[MemoryStore]:
    opened = store_backend.open()
    yield opened
    opened.close()
