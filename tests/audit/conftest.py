"""A ``Memory`` over each built-in store (json, memory, sqlite, postgres), for the
history, forgetting and erasure tests; postgres skips without a server (fails in CI)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memfold import Memory, MemoryConfig

STORAGES = ("json", "memory", "sqlite", "postgres")

MakeMemory = Callable[..., Memory]


@pytest.fixture(params=STORAGES)
def storage(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_mem(storage: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[MakeMemory]:
    """``make_mem(**config)`` → a Memory on this test's store (closed at the end)."""
    settings: dict[str, Any] = {"home": tmp_path / "home", "storage": storage}
    if storage == "postgres":
        settings["dsn"] = request.getfixturevalue("postgres_dsn")
    opened: list[Memory] = []

    def make(*, chat_model: Any = None, extractor: Any = None, **config: Any) -> Memory:
        config.setdefault("extractor", "rules" if chat_model is None else "auto")
        mem = Memory(
            MemoryConfig(**{**settings, **config}),
            chat_model=chat_model,
            extractor=extractor,
            start_workers=False,
        )
        opened.append(mem)
        return mem

    yield make
    for mem in opened:
        mem.close(timeout=5)
